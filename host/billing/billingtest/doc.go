// Package billingtest holds the end-to-end tests of issue 12's money path:
// a complete gateway in keys mode over a temporary data directory — in
// process (host/testkit/testgateway) or as the built cmd/bardo binary,
// killed with SIGKILL mid-load — in front of host/fakeupstream, the only
// fake. Callers pay with bardo_sk_ keys; the tests read the ledger and the
// usage records back from the real SQLite store and compare them with what
// the callers were shown (X-Bardo-Cost, X-Bardo-Balance, a stream's
// ": bardo cost=…" trailer).
//
// The package has no code outside its tests.
package billingtest
