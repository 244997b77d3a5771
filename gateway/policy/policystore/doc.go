// Package policystore keeps the gateway's policy tables through a database outage: Store
// opens the database once it answers, and until then answers every call with 503, rather
// than keeping an edit on one replica alone.
//
// It is apart from the gateway's wiring (gateway/run.go) so that a database that is down is
// handled, and tested, where the tables are.
package policystore
