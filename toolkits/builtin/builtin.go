// Package builtin is the table of the toolkits agentctl ships: one row
// per kind of tool declaration.
package builtin

import (
	"github.com/agentctl/agentctl/toolkits"
	"github.com/agentctl/agentctl/toolkits/exec"
	"github.com/agentctl/agentctl/toolkits/file"
	"github.com/agentctl/agentctl/toolkits/http"
	"github.com/agentctl/agentctl/toolkits/mcp"
	"github.com/agentctl/agentctl/toolkits/output"
)

// Table returns the toolkits by kind of declaration (spec.Tool.Kind).
func Table() toolkits.Table {
	return toolkits.Table{
		"exec":   exec.Kit,
		"http":   http.Kit,
		"file":   file.Kit,
		"output": output.Kit,
		"mcp":    mcp.Kit,
	}
}
