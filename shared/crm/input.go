package crm

import (
	"net/mail"
	"slices"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/currency"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/flex"
	"github.com/agentplane/agentplane/shared/kit/freeform"
)

// Bounds of deal and contact fields.
const (
	MaxTitleLength   = 500
	MaxContactLength = 200
	MaxValue         = 1_000_000_000_000_000
)

// DealInput is the body of a deal's creation or update: fields absent or null are left as they
// are (or defaulted on creation); an empty status or stage counts as absent.
type DealInput struct {
	Title    *string       `json:"title"`
	Status   *string       `json:"status"`
	Stage    *string       `json:"stage"`
	Value    flex.OptInt   `json:"value"`
	Currency *string       `json:"currency"`
	Contact  *ContactInput `json:"contact"`
	// PipelineID places a new deal in that pipeline (the default one otherwise), or moves a
	// deal to it.
	PipelineID *string `json:"pipeline_id"`
	// Fields are the values of the deal's custom fields (null removes one).
	Fields freeform.Object `json:"fields"`
}

// ContactInput is the contact of a deal, by its fields.
type ContactInput struct {
	Name    *string `json:"name"`
	Email   *string `json:"email"`
	Phone   *string `json:"phone"`
	Company *string `json:"company"`
	// Status, StatusID and StatusKey name the contact's status (the first given of StatusID,
	// StatusKey, Status); Status takes a key, a label or an id.
	Status    *string `json:"status"`
	StatusID  *string `json:"status_id"`
	StatusKey *string `json:"status_key"`
	// Fields are the values of the contact's custom fields (null removes one).
	Fields freeform.Object `json:"fields"`
}

func trimmed(s *string) string {
	if s == nil {
		return ""
	}
	return strings.TrimSpace(*s)
}

// check validates the fields in is carrying and normalises them in place.
func (in *DealInput) check(creating bool) error {
	var p apperr.Problems
	if in.Title != nil || creating {
		t := trimmed(in.Title)
		switch {
		case t == "":
			p.Add("title", "is required")
		case utf8.RuneCountInString(t) > MaxTitleLength:
			p.Add("title", "must be at most %d characters", MaxTitleLength)
		}
		in.Title = &t
	}
	if st := trimmed(in.Status); st == "" {
		in.Status = nil
	} else if st = strings.ToLower(st); !slices.Contains(Statuses, st) {
		p.Add("status", "must be one of open, won, lost")
	} else {
		in.Status = &st
	}
	if trimmed(in.Stage) == "" {
		in.Stage = nil
	}
	if in.Value.Set && (in.Value.Value < 0 || in.Value.Value > MaxValue) {
		p.Add("value", "must be an integer between 0 and %d", int64(MaxValue))
	}
	if in.Currency != nil {
		code := strings.ToUpper(trimmed(in.Currency))
		if u, err := currency.ParseISO(code); err != nil || u.String() != code {
			p.Add("currency", "must be an ISO 4217 code such as USD or EUR")
		}
		in.Currency = &code
	}
	if in.Contact != nil {
		in.Contact.check(&p, "contact.")
	}
	return p.Err()
}

// check validates the fields c carries, naming them after prefix ("contact." in a deal), and
// normalises them in place.
func (c *ContactInput) check(p *apperr.Problems, prefix string) {
	for field, v := range map[string]**string{prefix + "name": &c.Name, prefix + "phone": &c.Phone, prefix + "company": &c.Company, prefix + "email": &c.Email} {
		if *v == nil {
			continue
		}
		s := strings.TrimSpace(**v)
		if utf8.RuneCountInString(s) > MaxContactLength {
			p.Add(field, "must be at most %d characters", MaxContactLength)
		}
		*v = &s
	}
	if c.Email != nil && *c.Email != "" {
		addr, err := mail.ParseAddress(*c.Email)
		if err != nil || addr.Address != *c.Email {
			p.Add(prefix+"email", "must be an email address such as ada@example.com")
			return
		}
		lower := strings.ToLower(*c.Email)
		c.Email = &lower
	}
}

// empty reports whether the contact input carries nothing.
func (c *ContactInput) empty() bool {
	return c == nil || trimmed(c.Name)+trimmed(c.Email)+trimmed(c.Phone)+trimmed(c.Company) == ""
}
