// Command notification runs BoxOffice's notification as its own process.
package main

import (
	"boxoffice.dev/services/notification"
	"boxoffice.dev/platform/server"
)

func main() { server.Exec(notification.Run) }
