// Command boxoffice is the BoxOffice CLI: `up` runs the whole system in one process,
// `lab` replays a request trace through every rate-limiting algorithm.
package main

import "boxoffice.dev/platform/server"

func main() { server.Exec(run) }
