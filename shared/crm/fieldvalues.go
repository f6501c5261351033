package crm

import (
	"context"
	"maps"
	"net/mail"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/freeform"
)

// phonePattern is a phone number as people write them: digits, spaces and + ( ) - . /.
var phonePattern = regexp.MustCompile(`^\+?[0-9 ()./-]{3,32}$`)

// normalise checks v against the field's type and options, returning the value to keep (numbers
// as numbers, booleans as booleans, dates as YYYY-MM-DD or RFC 3339, e-mail addresses in lower
// case) or what is wrong with it.
func (f Field) normalise(v any) (any, string) {
	switch f.FieldType {
	case FieldNumber:
		switch n := v.(type) {
		case float64:
			return n, ""
		case string:
			if x, err := strconv.ParseFloat(strings.TrimSpace(n), 64); err == nil {
				return x, ""
			}
		}
		return nil, "must be a number"
	case FieldBoolean:
		switch b := v.(type) {
		case bool:
			return b, ""
		case string:
			if x, err := strconv.ParseBool(strings.TrimSpace(b)); err == nil {
				return x, ""
			}
		case float64:
			if b == 0 || b == 1 {
				return b == 1, ""
			}
		}
		return nil, "must be true or false"
	case FieldMultiselect:
		list, ok := v.([]any)
		if !ok {
			return nil, "must be a list of options (" + strings.Join(f.Options, ", ") + ")"
		}
		out := make([]any, 0, len(list))
		for _, x := range list {
			s, ok := x.(string)
			if !ok || !slices.Contains(f.Options, strings.TrimSpace(s)) {
				return nil, "must be a list of options (" + strings.Join(f.Options, ", ") + ")"
			}
			if !slices.Contains(out, any(strings.TrimSpace(s))) {
				out = append(out, strings.TrimSpace(s))
			}
		}
		return out, ""
	}
	s, ok := v.(string)
	if !ok {
		return nil, "must be a string"
	}
	s = strings.TrimSpace(s)
	switch f.FieldType {
	case FieldText:
		if utf8.RuneCountInString(s) > MaxFieldTextLength {
			return nil, "must be at most " + strconv.Itoa(MaxFieldTextLength) + " characters"
		}
	case FieldDate:
		if _, err := time.Parse(time.DateOnly, s); err != nil {
			if _, err := time.Parse(time.RFC3339, s); err != nil {
				return nil, "must be a date such as 2026-04-12 (or an RFC 3339 time)"
			}
		}
	case FieldSelect:
		if !slices.Contains(f.Options, s) {
			return nil, "must be one of " + strings.Join(f.Options, ", ")
		}
	case FieldEmail:
		addr, err := mail.ParseAddress(s)
		if err != nil || addr.Address != s {
			return nil, "must be an email address such as ada@example.com"
		}
		s = strings.ToLower(s)
	case FieldPhone:
		if !phonePattern.MatchString(s) {
			return nil, "must be a phone number such as +44 20 7946 0958"
		}
	case FieldURL:
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, "must be an http or https URL"
		}
	}
	return s, ""
}

// mergeFields applies in to stored (nil on creation), checking the values of the entity's
// custom fields: a defined field's value must fit it, null removes a value, a key that names no
// field is kept as it is. On creation every required field must have a value. Problems are
// named prefix+"fields."+key.
func mergeFields(defs []Field, entity string, stored, in freeform.Object, creating bool, p *apperr.Problems, prefix string) freeform.Object {
	out := freeform.Object{}
	maps.Copy(out, stored)
	byKey := map[string]Field{}
	for _, f := range defs {
		if f.Entity == entity {
			byKey[f.Key] = f
		}
	}
	for _, k := range slices.Sorted(maps.Keys(in)) {
		v := in[k]
		f, defined := byKey[k]
		switch {
		case v == nil && defined && f.IsRequired:
			p.Add(prefix+"fields."+k, "is required (%s)", f.Label)
		case v == nil:
			delete(out, k)
		case defined:
			norm, problem := f.normalise(v)
			if problem != "" {
				p.Add(prefix+"fields."+k, "%s (%s, a %s field)", problem, f.Label, f.FieldType)
				continue
			}
			out[k] = norm
		default:
			out[k] = v
		}
	}
	if creating {
		for _, k := range slices.Sorted(maps.Keys(byKey)) {
			if f := byKey[k]; f.IsRequired && out[k] == nil {
				p.Add(prefix+"fields."+k, "is required (%s)", f.Label)
			}
		}
	}
	if out.Size() > MaxFieldsSize {
		p.Add(prefix+"fields", "must be at most %d bytes of JSON", MaxFieldsSize)
	}
	return out
}

// withFields returns the values of fields after applying in (nil when in carries none and
// nothing is created), or the problems found.
func (s *Service) withFields(ctx context.Context, projectID, entity string, stored, in freeform.Object, creating bool, prefix string) (freeform.Object, error) {
	if in == nil && !creating {
		return stored, nil
	}
	defs, err := s.repo.Fields(ctx, projectID)
	if err != nil {
		return nil, err
	}
	var p apperr.Problems
	out := mergeFields(defs, entity, stored, in, creating, &p, prefix)
	return out, p.Err()
}
