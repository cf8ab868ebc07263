package spec

import (
	"bytes"
	"strings"

	"go.yaml.in/yaml/v3"
)

// previewKinds are the actions a preview may take.
var previewKinds = []string{"exec", "http", "file"}

// toolPreview decodes a tool's preview: one action that reads (an exec
// command, a GET or HEAD request, a file read or list), never the
// tool's own action.
func (d *decoder) toolPreview(f *file, v *yaml.Node, t *Tool, path string) {
	n := field(v, "preview")
	if n == nil || n.Kind != yaml.MappingNode {
		return
	}
	path += ".preview"
	if t.MCP != nil {
		d.errs.add(f.pos(n), "%s: an MCP server's tools take no preview: their actions are the server's; declare a tool of its own for what it would change", path)
		return
	}
	p := &Preview{Pos: f.pos(n), Verify: boolean(field(n, "verify")), Required: boolean(field(n, "required")),
		Timeout: d.duration(f, field(n, "timeout"), path+".timeout")}
	var kinds []string
	for _, k := range previewKinds {
		if field(n, k) != nil {
			kinds = append(kinds, k)
		}
	}
	if len(kinds) != 1 {
		d.errs.add(p.Pos, "%s: declare one action, exec, http or file (found %d: %s)", path, len(kinds), strings.Join(kinds, ", "))
	}
	if an := field(n, "exec"); an != nil && an.Kind == yaml.MappingNode {
		p.Exec = d.execAction(f, an, t, path+".exec")
	}
	if an := field(n, "http"); an != nil && an.Kind == yaml.MappingNode {
		p.HTTP = d.http(f, an, path+".http")
		if m := strings.ToUpper(p.HTTP.Method); m != "GET" && m != "HEAD" {
			d.errs.add(f.pos(orNode(field(an, "method"), an)), "%s.http.method: a preview changes nothing: GET or HEAD, not %s (a dry run behind another method is an exec preview, on its author's word)", path, p.HTTP.Method)
		}
	}
	if an := field(n, "file"); an != nil && an.Kind == yaml.MappingNode {
		p.File = d.fileOp(f, an, path+".file")
		if p.File.Op != "read" && p.File.Op != "list" {
			d.errs.add(f.pos(orNode(field(an, "op"), an)), "%s.file.op: a preview changes nothing: read or list, not %q", path, p.File.Op)
		}
	}
	for _, k := range kinds {
		if own := field(v, k); own != nil && sameNode(own, field(n, k)) {
			d.errs.add(f.pos(field(n, k)), "%s.%s: the preview is the tool's own action: it would carry the call out before anyone approves it; preview what it would do (a diff, a plan, a dry run)", path, k)
		}
	}
	t.Preview = p
}

// orNode is n, or else the node around it.
func orNode(n, around *yaml.Node) *yaml.Node {
	if n != nil {
		return n
	}
	return around
}

// sameNode reports whether two YAML nodes hold the same content,
// wherever they are written.
func sameNode(a, b *yaml.Node) bool {
	ea, erra := yaml.Marshal(deref(a))
	eb, errb := yaml.Marshal(deref(b))
	return erra == nil && errb == nil && bytes.Equal(ea, eb)
}
