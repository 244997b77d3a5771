// Command order runs BoxOffice's order as its own process.
package main

import (
	"boxoffice.dev/platform/server"
	"boxoffice.dev/services/order"
)

func main() { server.Exec(order.Run) }
