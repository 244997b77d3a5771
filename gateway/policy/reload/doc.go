// Package reload keeps a running policy (policy.Live) current without a restart: WatchFile
// applies the policy file when it changes, and FollowTable reads the stored admin edits and
// tenant overrides (policystore) on a timer and whenever a replica announces a change on
// NATS.
//
// These loops are apart from the model so that package policy stays pure, and apart from
// the store so that each is tested alone: a loop against a Live and a file or a table, the
// tables against a database.
package reload
