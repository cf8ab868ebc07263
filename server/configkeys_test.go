package server

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/spec"
)

// TestServerConfigKeys keeps the fields by which spec loading recognises
// a server configuration equal to Config's.
func TestServerConfigKeys(t *testing.T) {
	var keys []string
	ct := reflect.TypeOf(Config{})
	for i := range ct.NumField() {
		if name, _, _ := strings.Cut(ct.Field(i).Tag.Get("yaml"), ","); name != "" && name != "-" {
			keys = append(keys, name)
		}
	}
	slices.Sort(keys)
	got := slices.Sorted(slices.Values(spec.ServerConfigKeys()))
	if !slices.Equal(got, keys) {
		t.Errorf("spec.ServerConfigKeys() = %v, want Config's fields %v", got, keys)
	}
}
