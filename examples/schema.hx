// The example project of `make run`: a small social graph with posts and their embeddings.
// Every .hx file in this directory (recursively) is part of the schema.

N::User {
    UNIQUE INDEX handle: String,
    name: String,
    age: U8,
    created_at: Date DEFAULT NOW,
}

N::Post {
    title: String,
    body: String,
    tags: [String],
    published: Boolean DEFAULT false,
}

// Who follows whom; `since` is when they started.
E::Follows {
    From: User,
    To: User,
    Properties: {
        since: Date,
    }
}

E::Wrote {
    From: User,
    To: Post,
}

E::Likes {
    From: User,
    To: Post,
    Properties: {
        stars: U8 DEFAULT 5,
    }
}

// A post's text embedding; the vector itself is the record's data, the fields describe it.
V::PostEmbedding {
    model: String,
}

E::EmbeddingOf {
    From: PostEmbedding,
    To: Post,
}
