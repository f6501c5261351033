package text

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/ledongthuc/pdf"
)

const (
	// maxPDFPages bounds the pages read from one PDF.
	maxPDFPages = 5000
	// maxPDFTreeNodes bounds the page-tree nodes visited, so that a cyclic
	// or absurdly branched page tree cannot loop.
	maxPDFTreeNodes = 20000
	// maxPDFTreeDepth bounds the depth of the page tree.
	maxPDFTreeDepth = 64
)

// Causes of PDF extraction failures; the message a user sees is the one of
// the pdfError that wraps them.
var (
	errPDFEncrypted = errors.New("pdf is encrypted")
	errPDFCorrupt   = errors.New("pdf is corrupt")
	errPDFNoText    = errors.New("pdf has no text")
)

// pdfError is a PDF extraction failure whose message is written for end
// users. The kind (errPDFEncrypted, errPDFCorrupt or errPDFNoText) and the
// technical cause stay available to errors.Is and errors.As.
type pdfError struct {
	msg   string
	kind  error
	cause error
}

func (e *pdfError) Error() string { return e.msg }

func (e *pdfError) Unwrap() []error {
	if e.cause == nil {
		return []error{e.kind}
	}
	return []error{e.kind, e.cause}
}

func encryptedPDF(cause error) error {
	return &pdfError{
		msg:   "this PDF is password-protected, so its text cannot be read; remove the password and try again",
		kind:  errPDFEncrypted,
		cause: cause,
	}
}

func corruptPDF(cause error) error {
	return &pdfError{
		msg:   "this PDF could not be read; the file seems to be damaged or is not a valid PDF",
		kind:  errPDFCorrupt,
		cause: cause,
	}
}

func noTextPDF() error {
	return &pdfError{
		msg:  "this PDF contains no selectable text (it may be a scanned image); text recognition (OCR) is not supported",
		kind: errPDFNoText,
	}
}

// ExtractPDF returns the text of a PDF, pages separated by blank lines and
// the lines of a page by newlines. An encrypted, corrupt or image-only PDF
// gives an error whose message can be shown to an end user. Pages whose
// content cannot be decoded are skipped as long as some page can be read.
// Panics in the PDF library are recovered and reported as a corrupt PDF.
func ExtractPDF(body []byte) (string, error) {
	_, text, err := readPDF(body)
	return text, err
}

// readPDF returns the title metadata and the text of a PDF.
func readPDF(body []byte) (title, text string, err error) {
	defer func() {
		if r := recover(); r != nil {
			title, text = "", ""
			err = corruptPDF(fmt.Errorf("pdf library panic: %v", r))
		}
	}()
	body = repairPDFFraming(body)
	r, err := pdf.NewReader(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		if errors.Is(err, pdf.ErrInvalidPassword) || strings.Contains(err.Error(), "encrypt") {
			return "", "", encryptedPDF(err)
		}
		return "", "", corruptPDF(err)
	}
	pages := pdfPages(r)
	if len(pages) == 0 {
		return "", "", corruptPDF(errors.New("no pages found"))
	}
	var texts []string
	var pageErr error
	for _, p := range pages {
		raw, err := pageText(p)
		if err != nil {
			// Keep the readable pages, as viewers do; fail only if none is.
			if pageErr == nil {
				pageErr = err
			}
			continue
		}
		if t := cleanPDFText(raw); t != "" {
			texts = append(texts, t)
		}
	}
	if len(texts) == 0 && pageErr != nil {
		return "", "", corruptPDF(pageErr)
	}
	if len(texts) == 0 {
		return "", "", noTextPDF()
	}
	title = collapse(cleanPDFText(r.Trailer().Key("Info").Key("Title").Text()))
	return title, strings.Join(texts, "\n\n"), nil
}

// pageText returns the raw text of one page, turning panics of the PDF
// library into errors.
func pageText(p pdf.Page) (text string, err error) {
	defer func() {
		if r := recover(); r != nil {
			text, err = "", fmt.Errorf("pdf library panic: %v", r)
		}
	}()
	text, err = p.GetPlainText(nil)
	if err != nil {
		return "", fmt.Errorf("read page text: %w", err)
	}
	return text, nil
}

// repairPDFFraming works around two strict checks of the PDF library: it
// only accepts a "%PDF-1.0" to "%PDF-1.7" header followed by a line break,
// and wants "%%EOF" at the very end. PDF 2.0 headers are rewritten in place
// (offsets do not change) and bytes after the last "%%EOF" are dropped.
func repairPDFFraming(body []byte) []byte {
	if len(body) < 9 || !bytes.HasPrefix(body, []byte("%PDF-")) {
		return body
	}
	fixed := bytes.Clone(body)
	if v := fixed[5:8]; v[0] != '1' || v[1] != '.' || v[2] < '0' || v[2] > '7' {
		copy(v, "1.7")
	}
	if c := fixed[8]; c != '\r' && c != '\n' && (c == ' ' || c == '\t' || c == '%') {
		fixed[8] = '\n'
	}
	if i := bytes.LastIndex(fixed, []byte("%%EOF")); i > 0 {
		fixed = fixed[:i+len("%%EOF")]
	}
	return fixed
}

// pdfPages returns the pages of the document in order, walking the page
// tree with bounds on depth and size.
func pdfPages(r *pdf.Reader) []pdf.Page {
	var pages []pdf.Page
	visits := 0
	var walk func(v pdf.Value, depth int)
	walk = func(v pdf.Value, depth int) {
		visits++
		if depth > maxPDFTreeDepth || visits > maxPDFTreeNodes || len(pages) >= maxPDFPages {
			return
		}
		if kids := v.Key("Kids"); kids.Kind() == pdf.Array {
			for i := 0; i < kids.Len(); i++ {
				walk(kids.Index(i), depth+1)
			}
			return
		}
		if v.Key("Type").Name() == "Page" || !v.Key("Contents").IsNull() {
			pages = append(pages, pdf.Page{V: v})
		}
	}
	walk(r.Trailer().Key("Root").Key("Pages"), 0)
	return pages
}

// cleanPDFText drops invalid UTF-8 and control characters, collapses spaces
// inside lines and removes empty lines.
func cleanPDFText(s string) string {
	s = strings.ToValidUTF8(s, "")
	s = strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return r
		case r == '\r':
			return '\n'
		case unicode.IsControl(r) || r == unicode.ReplacementChar:
			return -1
		}
		return r
	}, s)
	var lines []string
	for line := range strings.SplitSeq(s, "\n") {
		if l := collapse(line); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}
