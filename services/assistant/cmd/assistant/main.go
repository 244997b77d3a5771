// Command assistant runs BoxOffice's assistant as its own process.
package main

import (
	"boxoffice.dev/platform/server"
	"boxoffice.dev/services/assistant"
)

func main() { server.Exec(assistant.Run) }
