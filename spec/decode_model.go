package spec

import (
	"net/url"
	"path/filepath"
	"strconv"

	"go.yaml.in/yaml/v3"
)

func (d *decoder) model(f *file, k, v *yaml.Node) *Model {
	v = deref(v)
	m := &Model{
		Name:     k.Value,
		Pos:      f.pos(k),
		Provider: str(field(v, "provider")),
		Model:    str(field(v, "model")),
		BaseURL:  str(field(v, "baseURL")),
	}
	if v.Kind != yaml.MappingNode {
		return m // the schema reports it
	}
	m.Retries = -1
	if n := scalar(field(v, "retries")); n != nil {
		m.Retries, _ = strconv.Atoi(n.Value)
	}
	if n := scalar(field(v, "maxTokens")); n != nil {
		m.MaxTokens, _ = strconv.Atoi(n.Value)
	}
	if n := scalar(field(v, "temperature")); n != nil {
		if t, err := strconv.ParseFloat(n.Value, 64); err == nil {
			m.Temperature = &t
		}
	}
	m.Timeout = d.duration(f, field(v, "timeout"), "models."+m.Name+".timeout")
	if n := scalar(field(v, "apiKey")); n != nil {
		m.APIKey = d.template(f, n, modelVars)
	}
	turns := items(field(v, "turns"))
	switch m.Provider {
	case ProviderScripted:
		if len(turns) == 0 && field(v, "turns") == nil {
			d.errs.add(m.Pos, "model %q: a scripted model needs turns", m.Name)
		}
		for _, key := range []string{"model", "baseURL", "apiKey"} {
			if kn := keyNode(v, key); kn != nil {
				d.errs.add(f.pos(kn), "models.%s.%s: not used by provider scripted", m.Name, key)
			}
		}
	case ProviderReplay:
		cn := scalar(field(v, "cassette"))
		if cn == nil {
			d.errs.add(m.Pos, "model %q: provider replay needs cassette (a file recorded with --record)", m.Name)
		} else {
			m.Cassette = cn.Value
			if !filepath.IsAbs(m.Cassette) {
				m.Cassette = filepath.Join(f.dir, m.Cassette)
			}
		}
	}
	if Hosted(m.Provider) {
		if m.Model == "" {
			d.errs.add(m.Pos, "model %q: provider %s needs model (the provider's model name)", m.Name, m.Provider)
		}
		if m.BaseURL != "" {
			if u, err := url.Parse(m.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				d.errs.add(f.pos(field(v, "baseURL")), "models.%s.baseURL: %q is not an http(s) URL", m.Name, m.BaseURL)
			}
		}
	}
	if m.Provider != ProviderScripted && field(v, "turns") != nil {
		d.errs.add(f.pos(keyNode(v, "turns")), "models.%s.turns: only provider scripted has turns", m.Name)
	}
	if m.Provider != ProviderReplay && field(v, "cassette") != nil {
		d.errs.add(f.pos(keyNode(v, "cassette")), "models.%s.cassette: only provider replay has a cassette", m.Name)
	}
	for _, tn := range turns {
		m.Turns = append(m.Turns, d.turn(f, tn))
	}
	return m
}

func (d *decoder) turn(f *file, n *yaml.Node) *Turn {
	t := &Turn{Pos: f.pos(n)}
	if n.Kind != yaml.MappingNode {
		return t // the schema reports it
	}
	text, calls := field(n, "text"), field(n, "toolCalls")
	if (text == nil) == (calls == nil) {
		d.errs.add(t.Pos, "a turn has either text or toolCalls")
	}
	if text = scalar(text); text != nil {
		t.Text = d.template(f, text, turnVars)
	}
	for _, cn := range items(calls) {
		c := &ScriptedCall{Pos: f.pos(cn), Tool: str(field(cn, "tool"))}
		if an := field(cn, "args"); an != nil && an.Kind == yaml.MappingNode {
			c.Args = d.value(f, an, turnVars)
		}
		if d.ref(f, field(cn, "tool"), "tool") {
			d.refs[len(d.refs)-1].scripted = true
		}
		t.ToolCalls = append(t.ToolCalls, c)
	}
	return t
}
