package workspaces

import (
	"encoding/base64"
	"net/http"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentplane/agentplane/shared/kit/apperr"
)

// Encodings of a file's content: text is UTF-8 as given; images and fonts are base64 of their
// bytes.
const (
	EncodingText   = "utf-8"
	EncodingBase64 = "base64"
)

// Type is a kind of file a workspace holds: the Content-Type it is served with, the language
// an editor shows it in, and, for binary files, the Content-Type its bytes must sniff as
// (http.DetectContentType), so that an HTML page cannot be stored as a .png.
type Type struct {
	ContentType string
	Language    string
	// Sniffed is what the bytes of a binary type must be detected as; empty for text.
	Sniffed string
}

// Binary reports whether the type's content is base64 of its bytes.
func (t Type) Binary() bool { return t.Sniffed != "" }

// Types are the file types a workspace holds, by extension: the text of a web site (pages,
// styles, scripts, data, documents) and its images and fonts. Anything else (executables,
// archives, server code of other languages) is refused.
var Types = map[string]Type{
	".html":        {ContentType: "text/html; charset=utf-8", Language: "html"},
	".htm":         {ContentType: "text/html; charset=utf-8", Language: "html"},
	".css":         {ContentType: "text/css; charset=utf-8", Language: "css"},
	".js":          {ContentType: "text/javascript; charset=utf-8", Language: "javascript"},
	".mjs":         {ContentType: "text/javascript; charset=utf-8", Language: "javascript"},
	".jsx":         {ContentType: "text/javascript; charset=utf-8", Language: "javascript"},
	".ts":          {ContentType: "text/plain; charset=utf-8", Language: "typescript"},
	".tsx":         {ContentType: "text/plain; charset=utf-8", Language: "typescript"},
	".json":        {ContentType: "application/json", Language: "json"},
	".webmanifest": {ContentType: "application/manifest+json", Language: "json"},
	".map":         {ContentType: "application/json", Language: "json"},
	".svg":         {ContentType: "image/svg+xml", Language: "xml"},
	".xml":         {ContentType: "application/xml", Language: "xml"},
	".md":          {ContentType: "text/markdown; charset=utf-8", Language: "markdown"},
	".txt":         {ContentType: "text/plain; charset=utf-8", Language: "plaintext"},
	".csv":         {ContentType: "text/csv; charset=utf-8", Language: "plaintext"},
	".yaml":        {ContentType: "text/plain; charset=utf-8", Language: "yaml"},
	".yml":         {ContentType: "text/plain; charset=utf-8", Language: "yaml"},
	".png":         {ContentType: "image/png", Language: "binary", Sniffed: "image/png"},
	".jpg":         {ContentType: "image/jpeg", Language: "binary", Sniffed: "image/jpeg"},
	".jpeg":        {ContentType: "image/jpeg", Language: "binary", Sniffed: "image/jpeg"},
	".gif":         {ContentType: "image/gif", Language: "binary", Sniffed: "image/gif"},
	".webp":        {ContentType: "image/webp", Language: "binary", Sniffed: "image/webp"},
	".ico":         {ContentType: "image/x-icon", Language: "binary", Sniffed: "image/x-icon"},
	".woff":        {ContentType: "font/woff", Language: "binary", Sniffed: "font/woff"},
	".woff2":       {ContentType: "font/woff2", Language: "binary", Sniffed: "font/woff2"},
}

// Extensions are the extensions of Types, sorted.
func Extensions() []string {
	out := make([]string, 0, len(Types))
	for ext := range Types {
		out = append(out, ext)
	}
	slices.Sort(out)
	return out
}

// typeOf is the type of a clean path, by its extension (in any case).
func typeOf(p string) (Type, bool) {
	t, ok := Types[strings.ToLower(path.Ext(p))]
	return t, ok
}

// TypeOf is the type of a stored file's path.
func TypeOf(p string) Type {
	t, _ := typeOf(p)
	return t
}

// decoded checks content against the type of the file at p and returns its size in bytes and
// its encoding: text must be UTF-8 without NUL; a binary type's content must be base64 of bytes
// that are what the type says.
func decoded(p, content string) (int, string, error) {
	t := TypeOf(p)
	if !t.Binary() {
		if !utf8.ValidString(content) || strings.ContainsRune(content, 0) {
			return 0, "", apperr.Invalidf("content", "must be UTF-8 text without NUL for a %s file", path.Ext(p))
		}
		return len(content), EncodingText, nil
	}
	raw, err := base64.StdEncoding.DecodeString(content)
	if err != nil {
		return 0, "", apperr.Invalidf("content", "must be the base64 of the file's bytes for a %s file", path.Ext(p))
	}
	if got := http.DetectContentType(raw); got != t.Sniffed {
		return 0, "", apperr.Invalidf("content", "must be a %s file (its bytes are %s)", t.Sniffed, got)
	}
	return len(raw), EncodingBase64, nil
}
