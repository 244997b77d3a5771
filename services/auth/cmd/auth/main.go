// Command auth runs BoxOffice's auth as its own process.
package main

import (
	"boxoffice.dev/services/auth"
	"boxoffice.dev/platform/server"
)

func main() { server.Exec(auth.Run) }
