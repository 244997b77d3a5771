// Command inventory runs BoxOffice's inventory as its own process.
package main

import (
	"boxoffice.dev/platform/server"
	"boxoffice.dev/services/inventory"
)

func main() { server.Exec(inventory.Run) }
