package text

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/go-pdf/fpdf"
)

var pdfPagesText = [][]string{
	{"The first page explains how agents store memories.", "Each memory is split into chunks before embedding."},
	{"The second page covers retention and deletion.", "Tenants can purge their data at any time."},
}

// makePDF renders one page per entry of pages, one line per sentence.
func makePDF(t testing.TB, title string, pages [][]string, configure func(*fpdf.Fpdf)) []byte {
	t.Helper()
	f := fpdf.New("P", "mm", "A4", "")
	if configure != nil {
		configure(f)
	}
	if title != "" {
		f.SetTitle(title, true)
	}
	f.SetFont("Helvetica", "", 12)
	for _, lines := range pages {
		f.AddPage()
		for _, line := range lines {
			f.Cell(0, 10, line)
			f.Ln(10)
		}
	}
	var buf bytes.Buffer
	if err := f.Output(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestExtractPDF(t *testing.T) {
	body := makePDF(t, "Memory handbook", pdfPagesText, nil)
	text, err := ExtractPDF(body)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join(pdfPagesText[0], "\n") + "\n\n" + strings.Join(pdfPagesText[1], "\n")
	if text != want {
		t.Errorf("ExtractPDF =\n%q\nwant\n%q", text, want)
	}
	page, kind, err := Extract(body, "application/pdf", nil)
	if err != nil || kind != PDF {
		t.Fatalf("Extract = %v, %v", kind, err)
	}
	if page.Title != "Memory handbook" || page.Text != want {
		t.Errorf("Extract page = %+v", page)
	}
}

func TestExtractPDFVersion2Header(t *testing.T) {
	body := makePDF(t, "", pdfPagesText[:1], nil)
	body = bytes.Replace(body, []byte("%PDF-1.3"), []byte("%PDF-2.0"), 1)
	body = append(body, "\ntrailing garbage after the end marker\n"...)
	text, err := ExtractPDF(body)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, pdfPagesText[0][0]) {
		t.Errorf("ExtractPDF = %q", text)
	}
}

func TestExtractPDFErrors(t *testing.T) {
	valid := makePDF(t, "", pdfPagesText, nil)
	tests := []struct {
		name string
		body []byte
		kind error
		msg  string
	}{
		{"empty", nil, errPDFCorrupt, "could not be read"},
		{"not a pdf", []byte("hello, this is not a PDF at all"), errPDFCorrupt, "could not be read"},
		{"header only", []byte("%PDF-1.4\n%%EOF\n"), errPDFCorrupt, "could not be read"},
		{"truncated", valid[:len(valid)/2], errPDFCorrupt, "could not be read"},
		{"broken xref", bytes.Replace(valid, []byte("xref"), []byte("xxxx"), 1), errPDFCorrupt, "could not be read"},
		{
			"password protected",
			makePDF(t, "", pdfPagesText, func(f *fpdf.Fpdf) { f.SetProtection(fpdf.CnProtectPrint, "user-secret", "owner-secret") }),
			errPDFEncrypted, "password-protected",
		},
		{"no text", makePDF(t, "", [][]string{{}}, nil), errPDFNoText, "no selectable text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, err := ExtractPDF(tt.body)
			if err == nil {
				t.Fatalf("ExtractPDF = %q, want an error", text)
			}
			if !errors.Is(err, tt.kind) {
				t.Errorf("error %v is not %v", err, tt.kind)
			}
			if msg := err.Error(); !strings.Contains(msg, tt.msg) || !strings.Contains(msg, "PDF") || strings.ContainsAny(msg, "%{}") {
				t.Errorf("error message %q is not a readable %q message", msg, tt.msg)
			}
		})
	}
}

func TestExtractPDFMutationsDoNotPanic(t *testing.T) {
	valid := makePDF(t, "Title", pdfPagesText, func(f *fpdf.Fpdf) { f.SetCompression(false) })
	x := uint32(88172645)
	for i := range 300 {
		body := bytes.Clone(valid)
		for range 1 + i%8 {
			x ^= x << 13
			x ^= x >> 17
			x ^= x << 5
			body[int(x)%len(body)] = byte(x >> 8)
		}
		// Either outcome is fine; the call must return.
		_, _ = ExtractPDF(body)
	}
}
