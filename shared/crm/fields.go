package crm

import (
	"context"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/flex"
	"github.com/agentplane/agentplane/shared/kit/freeform"
	"github.com/agentplane/agentplane/shared/kit/ids"
)

// Field types.
const (
	FieldText        = "text"
	FieldNumber      = "number"
	FieldDate        = "date"
	FieldSelect      = "select"
	FieldMultiselect = "multiselect"
	FieldBoolean     = "boolean"
	FieldEmail       = "email"
	FieldPhone       = "phone"
	FieldURL         = "url"
)

// FieldTypes lists the field types.
var FieldTypes = []string{FieldText, FieldNumber, FieldDate, FieldSelect, FieldMultiselect, FieldBoolean, FieldEmail, FieldPhone, FieldURL}

// What a custom field describes: contacts (the default) or deals.
const (
	EntityContact = "contact"
	EntityDeal    = "deal"
)

// Bounds of custom fields and their values.
const (
	MaxFields           = 100
	MaxFieldLabelLength = 100
	MaxFieldOptions     = 100
	MaxOptionLength     = 100
	MaxFieldTextLength  = 2000
	// MaxFieldsSize bounds the JSON text of a contact's or deal's fields.
	MaxFieldsSize = 16 << 10
)

// FieldResource names custom fields in errors.
const FieldResource = "field"

// Field is a custom field of a project's contacts or deals: their `fields` carry its value under
// its key (derived from its label when it is made).
type Field struct {
	UUID       string    `json:"uuid" bson:"_id"`
	ProjectID  string    `json:"-" bson:"project_id"`
	Key        string    `json:"key" bson:"key"`
	Label      string    `json:"label" bson:"label"`
	FieldType  string    `json:"field_type" bson:"field_type"`
	Options    []string  `json:"options" bson:"options"`
	IsRequired bool      `json:"is_required" bson:"is_required"`
	Entity     string    `json:"entity" bson:"entity"`
	CreatedAt  time.Time `json:"created_at" bson:"created_at"`
	UpdatedAt  time.Time `json:"updated_at" bson:"updated_at"`
}

// FieldInput is a custom field's creation or update: what is absent or null is kept (or
// defaulted on creation).
type FieldInput struct {
	Label      *string      `json:"label"`
	FieldType  *string      `json:"field_type"`
	Options    []string     `json:"options"`
	IsRequired flex.OptFlag `json:"is_required"`
	Entity     *string      `json:"entity"`
}

// FieldChange is a custom field after a change, with what became of the values stored under it:
// Stored is how many contacts or deals hold a value for it, Unfit how many of those values do
// not fit the field as it is now (they are kept as they were, never dropped).
type FieldChange struct {
	Field  Field `json:"field"`
	Stored int   `json:"stored_values"`
	Unfit  int   `json:"unfit_values"`
}

// FieldKey derives a field's key from its label: lower case letters and digits, other runs as
// one underscore, accents removed.
func FieldKey(label string) string {
	var b strings.Builder
	sep := false
	for _, r := range norm.NFD.String(strings.ToLower(label)) {
		switch {
		case unicode.Is(unicode.Mn, r):
		case r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			if sep && b.Len() > 0 {
				b.WriteByte('_')
			}
			b.WriteRune(r)
			sep = false
		default:
			sep = true
		}
	}
	return b.String()
}

// Fields lists the project's custom fields, oldest first.
func (s *Service) Fields(ctx context.Context, projectID string) ([]Field, error) {
	return s.repo.Fields(ctx, projectID)
}

// CreateField adds a custom field to the project.
func (s *Service) CreateField(ctx context.Context, projectID string, in FieldInput) (Field, error) {
	now := s.now()
	f := Field{UUID: ids.New(), ProjectID: projectID, FieldType: FieldText, Entity: EntityContact, Options: []string{}, CreatedAt: now, UpdatedAt: now}
	if in.Label == nil {
		return Field{}, apperr.Invalidf("label", "is required")
	}
	if err := in.apply(&f); err != nil {
		return Field{}, err
	}
	f.Key = FieldKey(f.Label)
	if f.Key == "" {
		return Field{}, apperr.Invalidf("label", "must hold a letter or a digit")
	}
	existing, err := s.repo.Fields(ctx, projectID)
	if err != nil {
		return Field{}, err
	}
	if len(existing) >= MaxFields {
		return Field{}, apperr.Invalidf("label", "a project has at most %d custom fields", MaxFields)
	}
	for _, e := range existing {
		if e.Key == f.Key && e.Entity == f.Entity {
			return Field{}, apperr.New(apperr.Conflict, "field_exists", "A "+f.Entity+" field with the key "+f.Key+" exists already ("+e.Label+").")
		}
	}
	return f, s.repo.InsertField(ctx, f)
}

// UpdateField changes a custom field of the project. Its key stays; the values stored under it
// are kept, and the answer says how many no longer fit it.
func (s *Service) UpdateField(ctx context.Context, projectID, id string, in FieldInput) (FieldChange, error) {
	f, err := s.repo.Field(ctx, projectID, strings.TrimSpace(id))
	if err != nil {
		return FieldChange{}, err
	}
	entity := f.Entity
	if err := in.apply(&f); err != nil {
		return FieldChange{}, err
	}
	if f.Entity != entity {
		return FieldChange{}, apperr.Invalidf("entity", "cannot change (the field is a %s field)", entity)
	}
	f.UpdatedAt = s.now()
	if err := s.repo.ReplaceField(ctx, f); err != nil {
		return FieldChange{}, err
	}
	return s.fieldValues(ctx, f)
}

// DeleteField removes a custom field of the project. The values stored under its key stay on
// their contacts or deals as free-form values; the answer says how many there are.
func (s *Service) DeleteField(ctx context.Context, projectID, id string) (FieldChange, error) {
	f, err := s.repo.Field(ctx, projectID, strings.TrimSpace(id))
	if err != nil {
		return FieldChange{}, err
	}
	if err := s.repo.DeleteField(ctx, projectID, f.UUID); err != nil {
		return FieldChange{}, err
	}
	change, err := s.fieldValues(ctx, f)
	change.Unfit = 0
	return change, err
}

// fieldValues counts the values stored under f's key, and those that do not fit f.
func (s *Service) fieldValues(ctx context.Context, f Field) (FieldChange, error) {
	change := FieldChange{Field: f}
	err := s.repo.EachFields(ctx, f.ProjectID, f.Entity, func(values freeform.Object) error {
		v, ok := values[f.Key]
		if !ok {
			return nil
		}
		change.Stored++
		if _, problem := f.normalise(v); problem != "" {
			change.Unfit++
		}
		return nil
	})
	return change, err
}

// apply validates in and sets what it carries on f.
func (in FieldInput) apply(f *Field) error {
	var p apperr.Problems
	if in.Label != nil {
		l := strings.TrimSpace(*in.Label)
		switch {
		case l == "":
			p.Add("label", "is required")
		case utf8.RuneCountInString(l) > MaxFieldLabelLength:
			p.Add("label", "must be at most %d characters", MaxFieldLabelLength)
		}
		f.Label = l
	}
	if t := strings.ToLower(trimmed(in.FieldType)); t != "" {
		if !slices.Contains(FieldTypes, t) {
			p.Add("field_type", "must be one of %s", strings.Join(FieldTypes, ", "))
		}
		f.FieldType = t
	}
	if e := strings.ToLower(trimmed(in.Entity)); e != "" {
		if e != EntityContact && e != EntityDeal {
			p.Add("entity", "must be contact or deal")
		}
		f.Entity = e
	}
	if in.Options != nil {
		f.Options = []string{}
		for i, o := range in.Options {
			o = strings.TrimSpace(o)
			switch {
			case o == "" || utf8.RuneCountInString(o) > MaxOptionLength:
				p.Add("options", "option %d must be 1 to %d characters", i+1, MaxOptionLength)
			case slices.Contains(f.Options, o):
				p.Add("options", "%q is given twice", o)
			default:
				f.Options = append(f.Options, o)
			}
		}
		if len(f.Options) > MaxFieldOptions {
			p.Add("options", "at most %d options", MaxFieldOptions)
		}
	}
	if in.IsRequired.Set {
		f.IsRequired = in.IsRequired.Value != 0
	}
	if (f.FieldType == FieldSelect || f.FieldType == FieldMultiselect) && len(f.Options) == 0 {
		p.Add("options", "are required for a %s field", f.FieldType)
	}
	return p.Err()
}
