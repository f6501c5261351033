// Command gen rewrites the configuration table of the page it is given (docs/configuration.md)
// from config.Vars; `go generate ./shared/kit/config` runs it.
package main

import (
	"fmt"
	"os"

	"github.com/agentplane/agentplane/shared/kit/config"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gen <page.md>")
		os.Exit(2)
	}
	page, err := os.ReadFile(os.Args[1])
	if err == nil {
		var out string
		if out, err = config.Page(string(page)); err == nil {
			err = os.WriteFile(os.Args[1], []byte(out), 0o644)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
