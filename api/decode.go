package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/agentplane/agentplane/shared/apperr"
)

// decode reads c's JSON body into dst: strict about syntax and types, lenient about presence.
// Unknown fields are ignored, null means absent and an empty body is an empty object. The body is
// read at most up to the configured limit. Keys starting with "$" and NUL characters are
// refused, so no body can smuggle an operator into a MongoDB document or filter.
func (s *server) decode(c *gin.Context, dst any) error {
	r := c.Request
	if r.ContentLength > s.maxBody {
		return tooLarge(s.maxBody)
	}
	raw, err := io.ReadAll(http.MaxBytesReader(c.Writer, r.Body, s.maxBody))
	if err != nil {
		if errors.As(err, new(*http.MaxBytesError)) {
			return tooLarge(s.maxBody)
		}
		return apperr.New(apperr.Malformed, "unreadable_body", "The request body could not be read.")
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil
	}
	if err := checkJSONContentType(r.Header.Get("Content-Type")); err != nil {
		return err
	}
	if !utf8.Valid(raw) {
		return apperr.New(apperr.Malformed, "invalid_utf8", "The request body is not valid UTF-8.")
	}
	doc, err := parseObject(raw)
	if err != nil {
		return err
	}
	if err := checkValues("", doc); err != nil {
		return err
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return apperr.Invalidf(jsonPath(te.Field), "must be %s", jsonTypeName(te.Type.Kind().String()))
		}
		return apperr.New(apperr.Malformed, "malformed_json", "The request body is not valid JSON: "+err.Error())
	}
	return nil
}

func tooLarge(limit int64) error {
	return apperr.New(apperr.TooLarge, "body_too_large", fmt.Sprintf("The request body is larger than %d bytes.", limit))
}

func checkJSONContentType(header string) error {
	unsupported := apperr.New(apperr.UnsupportedMedia, "unsupported_content_type", "The request body must be JSON with Content-Type: application/json.")
	if header == "" {
		return unsupported
	}
	mt, params, err := mime.ParseMediaType(header)
	if err != nil || mt != "application/json" {
		return unsupported
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return unsupported
	}
	return nil
}

// parseObject checks syntax, that the body is one JSON object and that nothing follows it.
func parseObject(raw []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, malformed(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, apperr.New(apperr.Malformed, "trailing_data", "The request body has data after its JSON object.")
	}
	doc, ok := v.(map[string]any)
	if !ok {
		return nil, apperr.New(apperr.Malformed, "body_not_object", "The request body must be a JSON object.")
	}
	return doc, nil
}

func malformed(err error) error {
	var se *json.SyntaxError
	msg := "The request body is not valid JSON."
	if errors.As(err, &se) {
		msg = fmt.Sprintf("The request body is not valid JSON at byte %d: %s.", se.Offset, se.Error())
	} else if errors.Is(err, io.ErrUnexpectedEOF) {
		msg = "The request body is not valid JSON: it ends too early."
	}
	return apperr.New(apperr.Malformed, "malformed_json", msg)
}

// checkValues walks a decoded body and refuses "$"-prefixed keys and NUL characters.
func checkValues(path string, v any) error {
	switch v := v.(type) {
	case map[string]any:
		for k, child := range v {
			p := k
			if path != "" {
				p = path + "." + k
			}
			if strings.HasPrefix(k, "$") {
				return apperr.Invalidf(p, "keys must not start with \"$\"")
			}
			if err := checkValues(p, child); err != nil {
				return err
			}
			if strings.ContainsRune(k, 0) {
				return apperr.Invalidf(path, "keys must not contain NUL characters")
			}
		}
	case []any:
		for i, child := range v {
			if err := checkValues(path+"["+strconv.Itoa(i)+"]", child); err != nil {
				return err
			}
		}
	case string:
		if strings.ContainsRune(v, 0) {
			return apperr.Invalidf(path, "must not contain NUL characters")
		}
	}
	return nil
}

// jsonPath turns encoding/json's field path into the body's: the names of embedded structs
// (capitalised Go type names; JSON names here are snake_case) are not part of the body.
func jsonPath(field string) string {
	parts := strings.Split(field, ".")
	kept := parts[:0]
	for _, p := range parts {
		if p != "" && !unicode.IsUpper([]rune(p)[0]) {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, ".")
}

func jsonTypeName(kind string) string {
	switch {
	case strings.HasPrefix(kind, "int"), strings.HasPrefix(kind, "uint"):
		return "an integer"
	case strings.HasPrefix(kind, "float"):
		return "a number"
	case kind == "string":
		return "a string"
	case kind == "bool":
		return "a boolean"
	case kind == "slice", kind == "array":
		return "an array"
	case kind == "map", kind == "struct":
		return "an object"
	}
	return "of another type"
}
