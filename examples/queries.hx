// The example project's queries. `silk serve` answers each one at POST /<QueryName> with the JSON body as its
// parameters, e.g. curl -s localhost:6969/GetUser -H 'content-type: application/json' -d '{"id": "1"}'.

QUERY CreateUser(handle: String, name: String, age: U8) =>
    user <- AddN<User>({handle: handle, name: name, age: age})
    RETURN user

QUERY GetUser(id: ID) =>
    user <- N<User>(id)
    RETURN user

// `since` is an ISO 8601 date, such as "2024-05-01".
QUERY Follow(follower: ID, followed: ID, since: Date) =>
    AddE<Follows>({since: since})::From(follower)::To(followed)
    RETURN "ok"

QUERY FollowersOf(id: ID) =>
    followers <- N<User>(id)::In<Follows>
    RETURN followers
