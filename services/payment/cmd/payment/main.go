// Command payment runs BoxOffice's payment as its own process.
package main

import (
	"boxoffice.dev/services/payment"
	"boxoffice.dev/platform/server"
)

func main() { server.Exec(payment.Run) }
