package engine

import "testing"

// BenchmarkLoadSnapshot: what a cold approve pays to recompile the run's
// spec from its snapshot.
func BenchmarkLoadSnapshot(b *testing.B) {
	g := compile(b, oncall)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := LoadSnapshot(g.snapshot, nil, nil); err != nil {
			b.Fatal(err)
		}
	}
}
