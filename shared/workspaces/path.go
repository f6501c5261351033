package workspaces

import (
	"path"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/agentplane/agentplane/shared/kit/apperr"
)

// Bounds of a file's path.
const (
	MaxPathBytes    = 512
	MaxSegmentBytes = 255
	MaxDepth        = 16
)

// CleanPath is the one form of a file's path that the workspace stores, confined to the
// workspace: relative to its root, segments joined by "/", NFC-normalised (two spellings of one
// name are one file). A leading "/" names the root (BoostGPT's client writes "/src/app.js"),
// so "/etc/passwd" is the workspace's etc/passwd and never the host's. Refused, as an Invalid
// error naming field: an empty path, a ".." segment, a backslash, NUL and other control or
// invisible format characters (bidirectional overrides, zero-width spaces), a percent-encoded
// byte ("%2e%2e" is not decoded into ".."; write the character itself), invalid UTF-8, a path
// ending in "/" (a folder, not a file), more than MaxPathBytes, a segment of more than
// MaxSegmentBytes or more than MaxDepth segments, and a name whose extension is not one of the
// file types a workspace holds (Types).
func CleanPath(field, p string) (string, error) {
	if strings.TrimSpace(p) == "" {
		return "", apperr.Invalidf(field, "is required")
	}
	if len(p) > 4*MaxPathBytes {
		// Refused before any work on it.
		return "", apperr.Invalidf(field, "must be at most %d bytes", MaxPathBytes)
	}
	if !utf8.ValidString(p) {
		return "", apperr.Invalidf(field, "must be UTF-8 text")
	}
	for i, r := range p {
		switch {
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			return "", apperr.Invalidf(field, "must not contain control or invisible characters (U+%04X at byte %d)", r, i)
		case r == '\\':
			return "", apperr.Invalidf(field, "must separate folders with / (not \\)")
		case r == '%' && i+2 < len(p) && isHex(p[i+1]) && isHex(p[i+2]):
			return "", apperr.Invalidf(field, "must not contain percent-encoded bytes (%s): write the character itself", p[i:i+3])
		}
	}
	p = norm.NFC.String(p)
	if strings.HasSuffix(p, "/") {
		return "", apperr.Invalidf(field, "must name a file, not a folder")
	}
	segments := strings.Split(strings.TrimLeft(p, "/"), "/")
	kept := segments[:0]
	for _, s := range segments {
		switch {
		case s == "..":
			return "", apperr.Invalidf(field, "must not contain .. (paths stay inside the workspace)")
		case s == "" || s == ".":
			continue
		case len(s) > MaxSegmentBytes:
			return "", apperr.Invalidf(field, "must have names of at most %d bytes", MaxSegmentBytes)
		case strings.TrimSpace(s) != s:
			return "", apperr.Invalidf(field, "must not have names starting or ending with spaces")
		}
		kept = append(kept, s)
	}
	clean := path.Join(kept...)
	switch {
	case clean == "" || clean == ".":
		return "", apperr.Invalidf(field, "must name a file")
	case len(clean) > MaxPathBytes:
		return "", apperr.Invalidf(field, "must be at most %d bytes", MaxPathBytes)
	case len(kept) > MaxDepth:
		return "", apperr.Invalidf(field, "must be at most %d folders deep", MaxDepth)
	}
	if _, ok := typeOf(clean); !ok {
		return "", apperr.Invalidf(field, "must end in the extension of a file type a workspace holds (%s)", strings.Join(Extensions(), ", "))
	}
	return clean, nil
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
