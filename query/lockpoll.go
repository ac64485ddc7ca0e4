package query

import "time"

// maxLockPoll is the longest a process waits between two tries of a lock.
const maxLockPoll = 250 * time.Millisecond

// nextLockPoll is the wait after one of d before the next try of a lock
// (the store's, Open; the delivery lock, LockDeliveries): doubled, up to
// maxLockPoll. The holder is usually an ingest or a check that finishes
// in seconds, so a waiter polls quickly at first.
func nextLockPoll(d time.Duration) time.Duration { return min(2*d, maxLockPoll) }
