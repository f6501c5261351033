package httpx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/agentplane/agentplane/shared/kit/apperr"
)

// Decoder reads requests' JSON bodies, at most MaxBody bytes of them; BodyTimeout is the time
// a body is given to arrive (the middleware's), named in the error of one that did not.
type Decoder struct {
	MaxBody     int64
	BodyTimeout time.Duration
}

// Decode reads c's JSON body into dst: strict about syntax and types, lenient about presence.
// Unknown fields are ignored, null means absent and an empty body is an empty object. The body is
// read at most up to the configured limit. NUL characters are refused. Keys may hold any
// character but NUL ("$where", "a.b"): typed fields have fixed names and free-form values are
// stored as JSON text (shared/freeform), so no key of a body becomes a document key or an operator.
func (d Decoder) Decode(c *gin.Context, dst any) error {
	raw, err := d.Raw(c)
	if err != nil {
		return err
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil
	}
	if err := checkJSONContentType(c.Request.Header.Get("Content-Type")); err != nil {
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
		if ferr := apperr.JSONField("", err); ferr != nil {
			return ferr
		}
		return apperr.New(apperr.Malformed, "malformed_json", "The request body is not valid JSON: "+err.Error())
	}
	return nil
}

// Text reads c's body as UTF-8 text of at most the configured limit (a JSONL import), trimmed.
func (d Decoder) Text(c *gin.Context) ([]byte, error) {
	raw, err := d.Raw(c)
	if err == nil && !utf8.Valid(raw) {
		err = apperr.New(apperr.Malformed, "invalid_utf8", "The request body is not valid UTF-8.")
	}
	return bytes.TrimSpace(raw), err
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

// checkValues walks a decoded body and refuses NUL characters in keys and strings.
func checkValues(path string, v any) error {
	switch v := v.(type) {
	case map[string]any:
		for k, child := range v {
			p := k
			if path != "" {
				p = path + "." + k
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

// Raw reads the request body as it is, at most up to the configured limit.
func (d Decoder) Raw(c *gin.Context) ([]byte, error) {
	r := c.Request
	if r.ContentLength > d.MaxBody {
		return nil, tooLarge(d.MaxBody)
	}
	raw, err := io.ReadAll(http.MaxBytesReader(c.Writer, r.Body, d.MaxBody))
	if err != nil {
		if errors.As(err, new(*http.MaxBytesError)) {
			return nil, tooLarge(d.MaxBody)
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, apperr.New(apperr.Timeout, "body_timeout", fmt.Sprintf("The request body did not arrive within %s.", d.BodyTimeout))
		}
		return nil, apperr.New(apperr.Malformed, "unreadable_body", "The request body could not be read.")
	}
	return raw, nil
}
