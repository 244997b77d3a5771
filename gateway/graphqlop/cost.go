package graphqlop

import (
	"encoding/json"
	"strconv"

	"github.com/vektah/gqlparser/v2/ast"
)

// CostModel weighs an operation before it runs, in points, by how many objects it may return,
// as GitHub and Shopify price GraphQL calls: an object costs 1, a leaf 0, a list field counts
// what it selects as many times as its first, last or limit says (else its parent's, else its
// Lists entry, since no schema is read), and each mutation root field adds Mutation. At least
// 1. The zero CostModel counts one per object, lists included. See docs/lessons/bff.md,
// "Query cost: counting objects, not requests".
type CostModel struct {
	// Lists names the list fields and their size when no argument gives one, by field name
	// ("cards") or, where one name means two things, by parent and field ("orders.orders").
	Lists map[string]int
	// Mutation is what each root field of a mutation adds.
	Mutation int
}

// MaxCost is where costs saturate: far above any budget, and exact in a Lua double.
const MaxCost = 1 << 40

// sizeArgs are the arguments that say how many objects a field returns.
var sizeArgs = []string{"first", "last", "limit"}

// cost is the operation's cost; writes is how many root fields a mutation calls.
func (m CostModel) cost(doc *ast.QueryDocument, op *ast.OperationDefinition, vars map[string]any, writes int) int {
	c := coster{m: m, doc: doc, op: op, vars: vars, frags: map[fragKey]int{}}
	n := c.set(nil, op.SelectionSet)
	if op.Operation == ast.Mutation {
		n = add(n, mul(m.Mutation, writes))
	}
	return max(1, n)
}

// coster walks one operation. A fragment's cost depends only on the field it is spread under
// (a multiplier applies to all of it alike), so each is weighed once per parent: a document
// that spreads fragments into fragments costs a walk linear in its size, not exponential.
type coster struct {
	m     CostModel
	doc   *ast.QueryDocument
	op    *ast.OperationDefinition
	vars  map[string]any
	frags map[fragKey]int // its cost; -1 while being weighed (a cycle counts 0)
}

// set weighs a selection set under the field parent (nil at the root).
func (c *coster) set(parent *ast.Field, set ast.SelectionSet) int {
	n := 0
	for _, s := range set {
		switch s := s.(type) {
		case *ast.Field:
			if len(s.SelectionSet) == 0 || introspection(s.Name) {
				continue
			}
			n = add(n, mul(c.size(parent, s), add(1, c.set(s, s.SelectionSet))))
		case *ast.InlineFragment:
			n = add(n, c.set(parent, s.SelectionSet))
		case *ast.FragmentSpread:
			n = add(n, c.fragment(parent, s.Name))
		}
	}
	return n
}

type fragKey struct {
	parent *ast.Field
	name   string
}

func (c *coster) fragment(parent *ast.Field, name string) int {
	k := fragKey{parent, name}
	if v, ok := c.frags[k]; ok {
		return max(0, v)
	}
	f := c.doc.Fragments.ForName(name)
	if f == nil { // the walker refuses it first
		return 0
	}
	c.frags[k] = -1
	v := c.set(parent, f.SelectionSet)
	c.frags[k] = v
	return v
}

// size is how many objects f returns under parent: 1 unless f is a list (in Lists); a list's
// own size argument, else its parent's, else its Lists entry.
func (c *coster) size(parent, f *ast.Field) int {
	n, ok := 0, false
	if parent != nil {
		n, ok = c.m.Lists[parent.Name+"."+f.Name]
	}
	if !ok {
		if n, ok = c.m.Lists[f.Name]; !ok {
			return 1
		}
	}
	if v, ok := c.sizeArg(f); ok {
		return v
	}
	if parent != nil {
		if v, ok := c.sizeArg(parent); ok {
			return v
		}
	}
	return n
}

// sizeArg is f's first, last or limit argument, when it has one that is a count.
func (c *coster) sizeArg(f *ast.Field) (int, bool) {
	for _, name := range sizeArgs {
		if a := f.Arguments.ForName(name); a != nil {
			if n, ok := c.intValue(a.Value); ok {
				return n, true
			}
		}
	}
	return 0, false
}

// intValue is v as a count: a literal, a variable's value, or its default. A negative or
// unreadable one is no size (the BFF refuses it); a huge one saturates.
func (c *coster) intValue(v *ast.Value) (int, bool) {
	if v == nil {
		return 0, false
	}
	switch v.Kind {
	case ast.IntValue:
		return count(v.Raw)
	case ast.Variable:
		if x, ok := c.vars[v.Raw]; ok {
			if n, isNum := x.(json.Number); isNum {
				return count(n.String())
			}
			return 0, false
		}
		if d := c.op.VariableDefinitions.ForName(v.Raw); d != nil {
			return c.intValue(d.DefaultValue)
		}
	}
	return 0, false
}

func count(s string) (int, bool) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange && s[0] != '-' {
			return MaxCost, true
		}
		return 0, false
	}
	if n < 0 {
		return 0, false
	}
	return int(min(n, MaxCost)), true
}

// add and mul saturate at MaxCost.
func add(a, b int) int { return min(a+b, MaxCost) } // both ≤ MaxCost: no overflow

func mul(a, b int) int {
	if a == 0 || b == 0 {
		return 0
	}
	if a > MaxCost/b {
		return MaxCost
	}
	return a * b
}
