// Command notification runs BoxOffice's notification as its own process.
package main

import (
	"boxoffice.dev/platform/server"
	"boxoffice.dev/services/notification"
)

func main() { server.Exec(notification.Run) }
