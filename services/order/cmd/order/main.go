// Command order runs BoxOffice's order as its own process.
package main

import (
	"boxoffice.dev/services/order"
	"boxoffice.dev/platform/server"
)

func main() { server.Exec(order.Run) }
