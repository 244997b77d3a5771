// Package policystore keeps the gateway's policy tables in its database: rate_limit_rule,
// the per-tenant overrides, and policy_edit, the admin edits, with their migrations; and
// what a database that is down means for them (Store answers 503 until it answers).
//
// It is apart from package policy so that the model stays pure, read and tested without a
// database. The loops that read these tables into the running policy are in package reload.
package policystore
