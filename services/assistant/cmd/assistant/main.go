// Command assistant runs BoxOffice's assistant as its own process.
package main

import (
	"boxoffice.dev/services/assistant"
	"boxoffice.dev/platform/server"
)

func main() { server.Exec(assistant.Run) }
