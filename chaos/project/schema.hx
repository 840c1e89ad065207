// The chaos harness's project (docs/CHAOS.md): the records of its three workloads. Every record carries the run's
// id, so several runs can share one cluster and each reads only its own.

// bank: accounts whose balances transfers move, and one Transfer record per transfer, in the same transaction.
N::Account {
    INDEX run: String,
    name: String,
    balance: I64,
}

N::Transfer {
    INDEX run: String,
    tid: String,
    src: String,
    dst: String,
    amount: I64,
}

// list-append: a list is a ListKey (its length) and one Element per appended value, at position length + 1.
N::ListKey {
    INDEX run: String,
    key: String,
    length: I64,
}

N::Element {
    INDEX key: String,
    pos: I64,
    value: I64,
}

// register: one integer register per record.
N::Register {
    INDEX run: String,
    key: String,
    value: I64,
}
