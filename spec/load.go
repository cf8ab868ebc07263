package spec

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

//go:embed agentctl.schema.json
var schemaJSON []byte

// FormatSchema returns the JSON Schema of the spec format itself.
func FormatSchema() []byte { return bytes.Clone(schemaJSON) }

// specSchema is the compiled spec schema, built on first use.
var specSchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	const url = "https://agentctl.dev/schema/spec-v1.json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	return c.Compile(url)
})

// DefaultMaxFile is the largest spec file LoadFiles reads.
const DefaultMaxFile = 4 << 20

// LoadFiles reads spec files and directories (every *.yaml and *.yml file
// directly in it, in name order) and loads them as one spec. A file over
// DefaultMaxFile bytes is refused.
func LoadFiles(paths ...string) (*Spec, error) { return Files{}.Load(paths...) }

// Files loads spec files with a size limit.
type Files struct {
	// MaxFile is the largest file read, in bytes; zero means
	// DefaultMaxFile.
	MaxFile int64
}

// Load reads spec files and directories, as LoadFiles does, refusing a
// file over f.MaxFile bytes.
func (f Files) Load(paths ...string) (*Spec, error) {
	if f.MaxFile <= 0 {
		f.MaxFile = DefaultMaxFile
	}
	if len(paths) == 0 {
		return nil, errors.New("no spec files: pass -f FILE or -f DIR")
	}
	var srcs []Source
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		names := []string{p}
		if fi.IsDir() {
			names = nil
			ents, err := os.ReadDir(p)
			if err != nil {
				return nil, err
			}
			for _, e := range ents {
				if ext := filepath.Ext(e.Name()); !e.IsDir() && (ext == ".yaml" || ext == ".yml") {
					names = append(names, filepath.Join(p, e.Name()))
				}
			}
			if len(names) == 0 {
				return nil, fmt.Errorf("%s: no *.yaml or *.yml files", p)
			}
		}
		for _, n := range names {
			data, err := readCapped(n, f.MaxFile)
			if err != nil {
				return nil, err
			}
			dir, err := filepath.Abs(filepath.Dir(n))
			if err != nil {
				return nil, err
			}
			srcs = append(srcs, Source{Name: n, Data: data, Dir: dir})
		}
	}
	return Load(srcs)
}

// Load parses and checks a spec made of the given files. When the spec is
// invalid the error is an Errors holding every problem found.
func Load(srcs []Source) (*Spec, error) { return load(srcs, false) }

// Reload loads a spec that Load accepted before, such as a run's snapshot,
// faster: it skips the schema check and compiles tool input schemas on
// first use. It still reports every problem it meets.
func Reload(srcs []Source) (*Spec, error) { return load(srcs, true) }

func load(srcs []Source, trusted bool) (*Spec, error) {
	var sch *jsonschema.Schema
	if !trusted {
		var err error
		if sch, err = specSchema(); err != nil {
			return nil, fmt.Errorf("spec schema: %w", err)
		}
	}
	var errs Errors
	var files []*file
	for _, src := range srcs {
		if slices.ContainsFunc(files, func(f *file) bool { return f.name == src.Name }) {
			continue // the same file named twice
		}
		dec := yaml.NewDecoder(bytes.NewReader(src.Data))
		for {
			var doc yaml.Node
			err := dec.Decode(&doc)
			if err == io.EOF {
				break
			}
			if err != nil {
				errs = append(errs, yamlError(src.Name, src.Data, err))
				break
			}
			f := &file{name: src.Name, dir: src.Dir, root: deref(doc.Content[0]), budget: maxNodes}
			if what := notSpec(f.root); what != "" && !trusted {
				notSpecError(f, what, &errs)
				continue
			}
			if sch != nil {
				validateSchema(f, sch, f.value(&doc, &errs), &errs)
			}
			files = append(files, f)
		}
	}
	if len(files) == 0 && len(errs) == 0 {
		var names []string
		for _, src := range srcs {
			names = append(names, src.Name)
		}
		if len(names) == 1 {
			errs.add(Pos{File: names[0]}, "no spec document: the file is empty")
		} else {
			errs.add(Pos{File: "spec"}, "no spec documents in %s", strings.Join(names, ", "))
		}
	}
	// Go on after schema errors: the decoder tolerates wrong shapes, so
	// that problems of meaning are reported in the same pass.
	s := &Spec{
		Models:  map[string]*Model{},
		Tools:   map[string]*Tool{},
		Agents:  map[string]*Agent{},
		Sources: srcs,
	}
	d := &decoder{spec: s, errs: &errs, trusted: trusted}
	for _, f := range files {
		d.file(f)
	}
	d.check()
	if err := errs.sorted(); err != nil {
		return nil, err
	}
	return s, nil
}

// ErrTooLarge reports a spec file over the size limit.
var ErrTooLarge = errors.New("spec file too large")

// readCapped reads a file of at most max bytes.
func readCapped(name string, max int64) ([]byte, error) {
	fh, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s: %w: over %d bytes (AGENTCTL_MAX_SPEC raises the limit)", name, ErrTooLarge, max)
	}
	return data, nil
}
