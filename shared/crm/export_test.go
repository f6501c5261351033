package crm_test

import (
	"testing"

	"github.com/agentplane/agentplane/shared/crm"
)

func TestNeutralise(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"=1+1", "'=1+1"},
		{"+33 1 23", "'+33 1 23"},
		{"-2", "'-2"},
		{"@SUM(A1)", "'@SUM(A1)"},
		{"\tcall", "'\tcall"},
		{"\r=1", "'\r=1"},
		{"Ada", "Ada"},
		{"a=b", "a=b"},
		{"", ""},
		{"'=quoted", "'=quoted"},
	} {
		if got := crm.Neutralise(tt.in); got != tt.want {
			t.Errorf("Neutralise(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
