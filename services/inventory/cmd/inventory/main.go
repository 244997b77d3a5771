// Command inventory runs BoxOffice's inventory as its own process.
package main

import (
	"boxoffice.dev/services/inventory"
	"boxoffice.dev/platform/server"
)

func main() { server.Exec(inventory.Run) }
