package names

import "testing"

func BenchmarkCheckDefault(b *testing.B) {
	for b.Loop() {
		_ = Check("alice.smith@example.com")
	}
}

func BenchmarkCheckUnicode(b *testing.B) {
	p := Profile{Unicode: true}
	for b.Loop() {
		_ = p.Check("Иван.Петров")
	}
}

func BenchmarkSkeleton(b *testing.B) {
	for b.Loop() {
		_ = Skeleton("Иван.Петров")
	}
}
