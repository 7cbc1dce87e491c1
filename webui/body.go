package webui

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strings"
)

// readBody reads a request's JSON body into v. Every failure is a 400
// (415 for a body not sent as JSON) whose message says what is wrong and
// where: the byte offset of a syntax error, the field of a wrong type.
func readBody(c *call, v any) error {
	// Only JSON, declared as such, as YARN's web services consume it. A
	// browser cannot send that across sites without asking first, so no
	// other site's page can submit or change anything here in the
	// visitor's name.
	ct := c.r.Header.Get("Content-Type")
	if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" && !strings.HasSuffix(mt, "+json") {
		return &webError{status: http.StatusUnsupportedMediaType, class: classNotSupported,
			message: fmt.Sprintf("Content-Type %q is not supported: send the body as application/json", ct)}
	}
	return decodeJSON(http.MaxBytesReader(c.w, c.r.Body, maxBody), v)
}

// decodeJSON reads exactly one JSON value from r into v.
func decodeJSON(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	if err := dec.Decode(v); err != nil {
		return jsonError("", err, dec.InputOffset())
	}
	// One value and nothing after it but space.
	at := dec.InputOffset()
	var extra json.RawMessage
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
		return nil
	case err == nil:
		return badRequest("malformed JSON: unexpected data after the JSON value at offset %d", at)
	default:
		return jsonError("", err, dec.InputOffset())
	}
}

// jsonError explains a decoding error of the value at path ("" for the
// body itself).
func jsonError(path string, err error, offset int64) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var big *http.MaxBytesError
	switch {
	case errors.Is(err, io.EOF):
		return badRequest("the request body is empty: expected a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("malformed JSON: the body ends inside a value at offset %d", offset)
	case errors.As(err, &syn):
		return badRequest("malformed JSON at offset %d: %s", syn.Offset, strings.TrimPrefix(syn.Error(), "json: "))
	case errors.As(err, &typ):
		field := joinPath(path, typ.Field)
		if field == "" {
			return badRequest("the body must be a JSON object, got %s", typ.Value)
		}
		where := ""
		if path == "" {
			where = fmt.Sprintf(" at offset %d", typ.Offset)
		}
		return badRequest("%s: expected %s, got %s%s", field, jsonKind(typ.Type), typ.Value, where)
	case errors.As(err, &big):
		return badRequest("the request body is larger than %d bytes", big.Limit)
	}
	var we *webError
	if errors.As(err, &we) {
		return we
	}
	if path != "" {
		return badRequest("%s: %v", path, err)
	}
	return badRequest("cannot read the request body: %v", err)
}

func joinPath(path, field string) string {
	switch {
	case path == "":
		return field
	case field == "":
		return path
	}
	return path + "." + field
}

// jsonKind names a Go type the way a JSON writer thinks of it.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32:
		return "an integer (32 bits)"
	case reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return t.String()
}

// decodeList reads a list that YARN's JSON may have flattened to its only
// element: [a, b], or a alone. path names it in errors, with the index
// of a bad element.
func decodeList[T any](path string, raw json.RawMessage) ([]T, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	if raw[0] != '[' {
		var one T
		if err := json.Unmarshal(raw, &one); err != nil {
			return nil, jsonError(path, err, 0)
		}
		return []T{one}, nil
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, jsonError(path, err, 0)
	}
	out := make([]T, 0, len(elems))
	for i, e := range elems {
		var v T
		if err := json.Unmarshal(e, &v); err != nil {
			return nil, jsonError(fmt.Sprintf("%s[%d]", path, i), err, 0)
		}
		out = append(out, v)
	}
	return out, nil
}
