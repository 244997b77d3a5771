// Package money is the one type for an amount of money in BoxOffice: an integer count of a
// currency's minor units, never a float, so sums and comparisons are exact.
package money

import "fmt"

// Money is an amount in minor units (cents) of an ISO 4217 currency. Its JSON is the shape
// every REST API and event uses: {"currency":"BRL","minor":12550} for BRL 125.50. The zero
// Money is no amount in no currency.
type Money struct {
	Currency string `json:"currency"`
	Minor    int64  `json:"minor"`
}

// String writes m with two decimals ("BRL 125.50"), the exponent of every currency BoxOffice
// sells in.
func (m Money) String() string {
	sign := ""
	minor := m.Minor
	if minor < 0 {
		sign, minor = "-", -minor
	}
	return fmt.Sprintf("%s %s%d.%02d", m.Currency, sign, minor/100, minor%100)
}
