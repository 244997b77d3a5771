// Package fixture declares one name of each kind the link checker resolves.
package fixture

// Limit is a constant.
const Limit = 5

// Default is a variable.
var Default = Rule{ID: "default"}

// Rule is a struct with fields, an embedded field and a method.
type Rule struct {
	ID    string
	Burst int
	embedded
}

type embedded struct{}

// Validate is a method on a pointer receiver.
func (r *Rule) Validate() error { return nil }

// Limiter is an interface with a method.
type Limiter interface {
	Allow() bool
}

// Cache is a generic type with a method.
type Cache[K comparable, V any] struct{ m map[K]V }

// Get is a method of a generic type.
func (c *Cache[K, V]) Get(k K) V { return c.m[k] }

// New is a function.
func New() *Rule { return &Rule{} }
