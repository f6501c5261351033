package api_test

import (
	"encoding/csv"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

func TestContactsExport(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.crmAPI(t)
	for _, f := range []map[string]any{
		{"label": "Company Size", "field_type": "select", "options": []any{"1-10", "11-50"}},
		{"label": "Interests", "field_type": "multiselect", "options": []any{"news", "offers"}},
		{"label": "Seats", "field_type": "number"},
		{"label": "=cmd|' /C calc'!A0", "field_type": "text"},
		{"label": "Deal source", "entity": "deal"},
	} {
		c.ok(t, "POST", "/v1/bot/crm/fields", f)
	}
	create := func(body map[string]any) string {
		return c.ok(t, "POST", "/v1/bot/crm/contacts", body)["contact"].(map[string]any)["uuid"].(string)
	}
	ada := create(map[string]any{"name": "Zoë \"the boss\", Ada\nLovelace", "email": "ada@example.com", "phone": "+44 20 7946 0958",
		"company": "Engines, Ltd", "status_key": "customer",
		"fields": map[string]any{"company_size": "11-50", "interests": []any{"news", "offers"}, "seats": 12.5, "cmd_c_calc_a0": "@SUM(A1:A9)", "other": "kept"}})
	evil := create(map[string]any{"name": "=HYPERLINK(\"http://evil.example\",\"click\")", "company": "-2+3",
		"fields": map[string]any{"cmd_c_calc_a0": "\r=1+1"}})
	plain := create(map[string]any{"name": "Bob"})

	res := c.do("GET", "/v1/bot/crm/contacts/export", nil)
	expect(t, res, http.StatusOK, "")
	if ct := res.Header.Get("Content-Type"); ct != "text/csv; charset=utf-8" || !strings.Contains(res.Header.Get("Content-Disposition"), `filename="contacts.csv"`) {
		t.Fatalf("headers %v", res.Header)
	}
	if !strings.HasSuffix(string(res.Body), "\r\n") {
		t.Fatalf("rows do not end in CRLF: %q", res.Body)
	}
	rows, err := csv.NewReader(strings.NewReader(string(res.Body))).ReadAll()
	if err != nil {
		t.Fatalf("not CSV: %v\n%s", err, res.Body)
	}
	wantHeader := []string{"uuid", "name", "email", "phone", "company", "status", "status_label", "summary", "created_at", "updated_at",
		"Company Size", "Interests", "Seats", "'=cmd|' /C calc'!A0"}
	if !reflect.DeepEqual(rows[0], wantHeader) {
		t.Fatalf("header %q, want %q", rows[0], wantHeader)
	}
	byID := map[string][]string{}
	for _, r := range rows[1:] {
		byID[r[0]] = r
	}
	if len(rows) != 4 || len(byID) != 3 {
		t.Fatalf("rows %q", rows)
	}
	for _, tt := range []struct {
		name, id string
		cols     map[int]string
	}{
		{"QuotesCommasNewlinesUnicode", ada, map[int]string{1: "Zoë \"the boss\", Ada\nLovelace", 2: "ada@example.com", 3: "'+44 20 7946 0958",
			4: "Engines, Ltd", 5: "customer", 6: "Customer", 10: "11-50", 11: "news; offers", 12: "12.5", 13: "'@SUM(A1:A9)"}},
		{"Formulas", evil, map[int]string{1: "'=HYPERLINK(\"http://evil.example\",\"click\")", 4: "'-2+3", 13: "'=1+1"}},
		{"NoFields", plain, map[int]string{1: "Bob", 5: "lead", 10: "", 11: "", 12: "", 13: ""}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			row := byID[tt.id]
			if len(row) != len(wantHeader) {
				t.Fatalf("row %q", row)
			}
			for col, want := range tt.cols {
				if row[col] != want {
					t.Errorf("%s = %q, want %q", wantHeader[col], row[col], want)
				}
			}
		})
	}
}
