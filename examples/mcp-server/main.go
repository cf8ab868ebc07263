// Command mcp-server is the demo MCP server the k8s example talks to.
package main

import (
	"fmt"
	"os"

	"github.com/agentctl/agentctl/toolkits/mcp/demoserver"
)

func main() {
	if err := demoserver.Serve(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
