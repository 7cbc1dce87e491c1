package webui

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strconv"
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

// readBodyOrXML reads a body sent as JSON into v as readBody does, or one
// sent as XML (application/xml), as YARN's web services take it too,
// whose root element must be root. Either must be declared: another
// Content-Type is a 415.
func readBodyOrXML(c *call, v any, root string) error {
	ct := c.r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	switch {
	case err == nil && (mt == "application/xml" || strings.HasSuffix(mt, "+xml")):
		return decodeXML(http.MaxBytesReader(c.w, c.r.Body, maxBody), root, v)
	case err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json")):
		return decodeJSON(http.MaxBytesReader(c.w, c.r.Body, maxBody), v)
	}
	return &webError{status: http.StatusUnsupportedMediaType, class: classNotSupported,
		message: fmt.Sprintf("Content-Type %q is not supported: send the body as application/json or application/xml", ct)}
}

// decodeXML reads one XML document whose root element is root into v.
// Go's decoder expands no entities but XML's five and fetches nothing,
// so a body cannot make it read files or grow.
func decodeXML(r io.Reader, root string, v any) error {
	dec := xml.NewDecoder(r)
	var start *xml.StartElement
	for start == nil {
		tok, err := dec.Token()
		if err != nil {
			return xmlError(root, err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			start = &t
		case xml.CharData:
			if len(bytes.TrimSpace(t)) > 0 {
				return badRequest("malformed XML: text before the root element <%s>", root)
			}
		case xml.Directive:
			return badRequest("malformed XML: a <!%s> directive is not taken", firstWord(t))
		}
	}
	if start.Name.Local != root {
		return badRequest("the body's root element is <%s>, want <%s>", start.Name.Local, root)
	}
	if err := dec.DecodeElement(v, start); err != nil {
		return xmlError(root, err)
	}
	// One document and nothing after it but space, comments and
	// processing instructions.
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return xmlError(root, err)
		}
		switch t := tok.(type) {
		case xml.CharData:
			if len(bytes.TrimSpace(t)) == 0 {
				continue
			}
		case xml.Comment, xml.ProcInst:
			continue
		}
		return badRequest("malformed XML: unexpected data after the root element <%s> at line %d", root, lineOf(dec))
	}
}

func lineOf(dec *xml.Decoder) int {
	line, _ := dec.InputPos()
	return line
}

func firstWord(b []byte) string {
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// xmlError explains a decoding error of an XML body.
func xmlError(root string, err error) error {
	var syn *xml.SyntaxError
	var big *http.MaxBytesError
	var num *strconv.NumError
	switch {
	case errors.Is(err, io.EOF):
		return badRequest("the request body is empty: expected an XML document <%s>", root)
	case errors.As(err, &big):
		return badRequest("the request body is larger than %d bytes", big.Limit)
	case errors.As(err, &syn):
		return badRequest("malformed XML at line %d: %s", syn.Line, syn.Msg)
	case errors.As(err, &num):
		return badRequest("malformed XML: %q is not a number", num.Num)
	}
	var we *webError
	if errors.As(err, &we) {
		return we
	}
	return badRequest("malformed XML: %s", strings.TrimPrefix(err.Error(), "xml: "))
}
