package textcheck

import "testing"

func TestJSON(t *testing.T) {
	for _, tc := range []struct {
		in, ptr, problem string
		off              int
	}{
		{`{"input":"a\u0000b"}`, "", "", -1},
		{`{"a":"\ud83d\ude00","b":"é"}`, "", "", -1},
		{"{\"input\":\"a\xffb\"}", "/input", "byte 0xff is not UTF-8", 11},
		{`{"x":[1,{"y":"\ud800"}]}`, "/x/1/y", `\ud800 is a lone surrogate`, 14},
		{`{"x":["ok","\udc00z"]}`, "/x/1", `\udc00 is a lone surrogate`, 12},
		{`{"a/b~":{"c":"\ud800\u0041"}}`, "/a~1b~0/c", `\ud800 is a lone surrogate`, 14},
		{"{\"k\xc3\":1}", "/k\ufffd", "byte 0xc3 is not UTF-8", 3},
		{"\"\xff\"", "", "byte 0xff is not UTF-8", 1},
		{`{"a":"\\ud800"}`, "", "", -1},
	} {
		err := JSON([]byte(tc.in))
		if tc.off < 0 {
			if err != nil {
				t.Errorf("JSON(%q) = %v, want nil", tc.in, err)
			}
			continue
		}
		if err == nil || err.Offset != tc.off || err.Pointer != tc.ptr || err.Problem != tc.problem {
			t.Errorf("JSON(%q) = %+v (%q), want offset %d pointer %q problem %q", tc.in, err, err.Pointer, tc.off, tc.ptr, tc.problem)
		}
	}
}

func TestText(t *testing.T) {
	if err := Text("a\x00b é"); err != nil {
		t.Errorf("Text with NUL: %v", err)
	}
	err := Text("ab\xe2\x82")
	if err == nil || err.Offset != 2 || err.Error() != "byte 0xe2 is not UTF-8 at byte 3" {
		t.Errorf("Text = %v", err)
	}
}
