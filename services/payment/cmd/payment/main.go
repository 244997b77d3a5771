// Command payment runs BoxOffice's payment as its own process.
package main

import (
	"boxoffice.dev/platform/server"
	"boxoffice.dev/services/payment"
)

func main() { server.Exec(payment.Run) }
