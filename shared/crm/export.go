package crm

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"io"
	"strconv"
	"strings"
)

// contactColumns are the export's columns before the custom fields'.
var contactColumns = []string{"uuid", "name", "email", "phone", "company", "status", "status_label", "summary", "created_at", "updated_at"}

// exportFlush is how many rows the export writes between flushes.
const exportFlush = 256

// ContactsExport is the export of a project's contacts, ready to be written: its custom fields
// are read (what can fail before anything is written).
type ContactsExport struct {
	repo      Repo
	projectID string
	fields    []Field
}

// ExportContacts prepares the export of the project's contacts as CSV.
func (s *Service) ExportContacts(ctx context.Context, projectID string) (*ContactsExport, error) {
	all, err := s.repo.Fields(ctx, projectID)
	if err != nil {
		return nil, err
	}
	e := &ContactsExport{repo: s.repo, projectID: projectID}
	for _, f := range all {
		if f.Entity == EntityContact {
			e.fields = append(e.fields, f)
		}
	}
	return e, nil
}

// WriteTo writes the contacts to w as CSV (RFC 4180, UTF-8, CRLF line ends): a header, then one
// row per contact read from a cursor, so its memory does not grow with the contacts. The custom
// fields of contacts are columns after the contact's own, headed by their labels; a
// multiselect's options are joined with "; ". A cell a spreadsheet would read as a formula is
// neutralised (Neutralise).
func (e *ContactsExport) WriteTo(ctx context.Context, w io.Writer) error {
	out := csv.NewWriter(w)
	out.UseCRLF = true
	row := make([]string, len(contactColumns)+len(e.fields))
	copy(row, contactColumns)
	for i, f := range e.fields {
		row[len(contactColumns)+i] = Neutralise(f.Label)
	}
	if err := out.Write(row); err != nil {
		return err
	}
	n := 0
	err := e.repo.EachContact(ctx, e.projectID, func(c *Contact) error {
		for i, v := range []string{c.UUID, c.Name, c.Email, c.Phone, c.Company, c.Status, c.StatusLabel, c.Summary, c.CreatedAt, c.UpdatedAt} {
			row[i] = Neutralise(v)
		}
		for i, f := range e.fields {
			row[len(contactColumns)+i] = Neutralise(cell(c.Fields[f.Key]))
		}
		if err := out.Write(row); err != nil {
			return err
		}
		if n++; n%exportFlush == 0 {
			out.Flush()
			return out.Error()
		}
		return nil
	})
	if err != nil {
		return err
	}
	out.Flush()
	return out.Error()
}

// Neutralise prefixes with a single quote a cell that a spreadsheet would read as a formula: one
// starting with =, +, -, @, a tab or a carriage return (OWASP's CSV injection advice).
func Neutralise(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

// cell is a custom field's value as CSV text.
func cell(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case []any:
		parts := make([]string, len(x))
		for i, p := range x {
			parts[i] = cell(p)
		}
		return strings.Join(parts, "; ")
	}
	text, _ := json.Marshal(v)
	return string(text)
}
