// Package filekind names the type of a file in words, for messages that
// refuse a file that is not the kind asked for.
package filekind

import "io/fs"

// Of names the type of a file of mode m: "a named pipe", "a socket",
// "a character device", "a block device", "a directory", "a regular
// file", or "a file of type" and its letters.
func Of(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m.IsDir():
		return "a directory"
	case m.IsRegular():
		return "a regular file"
	}
	return "a file of type " + m.Type().String()
}
