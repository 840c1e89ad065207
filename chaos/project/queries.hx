// The chaos workloads' transactions (chaos/workloads.ts). Each QUERY is one transaction; new records go round-robin
// over the partitions, so most of these touch several partitions (a two-phase commit).

// bank
QUERY OpenAccount(run: String, name: String, balance: I64) =>
    account <- AddN<Account>({run: run, name: name, balance: balance})
    RETURN account

QUERY Transfer(run: String, tid: String, from: ID, to: ID, src: String, dst: String, amount: I64) =>
    a <- N<Account>(from)::UPDATE({balance: SUB(N<Account>(from)::{balance}, amount)})
    b <- N<Account>(to)::UPDATE({balance: ADD(N<Account>(to)::{balance}, amount)})
    t <- AddN<Transfer>({run: run, tid: tid, src: src, dst: dst, amount: amount})
    RETURN a, b

QUERY Accounts(run: String) =>
    accounts <- N<Account>::WHERE(_::{run}::EQ(run))
    RETURN accounts

QUERY Transfers(run: String) =>
    transfers <- N<Transfer>::WHERE(_::{run}::EQ(run))
    RETURN transfers

// list-append
QUERY OpenList(run: String, key: String) =>
    list <- AddN<ListKey>({run: run, key: key, length: 0})
    RETURN list

QUERY Append(id: ID, key: String, value: I64) =>
    list <- N<ListKey>(id)::UPDATE({length: ADD(N<ListKey>(id)::{length}, 1)})
    element <- AddN<Element>({key: key, pos: list::{length}, value: value})
    RETURN element

QUERY ReadList(key: String) =>
    elements <- N<Element>::WHERE(_::{key}::EQ(key))
    RETURN elements

// Reads one list, then appends to another (or the same): both in one transaction.
QUERY ReadAppend(read: String, id: ID, key: String, value: I64) =>
    elements <- N<Element>::WHERE(_::{key}::EQ(read))
    list <- N<ListKey>(id)::UPDATE({length: ADD(N<ListKey>(id)::{length}, 1)})
    element <- AddN<Element>({key: key, pos: list::{length}, value: value})
    RETURN elements, element

QUERY AppendTwo(id1: ID, key1: String, value1: I64, id2: ID, key2: String, value2: I64) =>
    list1 <- N<ListKey>(id1)::UPDATE({length: ADD(N<ListKey>(id1)::{length}, 1)})
    element1 <- AddN<Element>({key: key1, pos: list1::{length}, value: value1})
    list2 <- N<ListKey>(id2)::UPDATE({length: ADD(N<ListKey>(id2)::{length}, 1)})
    element2 <- AddN<Element>({key: key2, pos: list2::{length}, value: value2})
    RETURN element1, element2

// register
QUERY OpenRegister(run: String, key: String, value: I64) =>
    register <- AddN<Register>({run: run, key: key, value: value})
    RETURN register

QUERY RegisterRead(id: ID) =>
    register <- N<Register>(id)
    RETURN register

QUERY RegisterWrite(id: ID, value: I64) =>
    register <- N<Register>(id)::UPDATE({value: value})
    RETURN register

QUERY RegisterCas(id: ID, old: I64, new: I64) =>
    register <- N<Register>(id)::WHERE(_::{value}::EQ(old))::UPDATE({value: new})
    RETURN register
