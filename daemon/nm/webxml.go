package nm

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
)

// XML answers: YARN's web services answer XML to a client that asks for
// it (Accept: application/xml), the same document as the JSON with the
// JSON's top-level key as the root element, fields as elements and lists
// as repeated elements.

// wantsXML says whether the Accept header prefers XML to JSON: the media
// range with the higher quality wins; JSON on a tie, with no Accept, or
// for */*.
func wantsXML(r *http.Request) bool {
	var xmlQ, jsonQ float64 = -1, -1
	for _, h := range r.Header.Values("Accept") {
		for part := range strings.SplitSeq(h, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			q := 1.0
			if s, ok := params["q"]; ok {
				if v, err := strconv.ParseFloat(s, 64); err == nil {
					q = v
				}
			}
			switch mt {
			case "application/xml", "text/xml":
				xmlQ = max(xmlQ, q)
			case "application/json", "*/*", "application/*":
				jsonQ = max(jsonQ, q)
			}
		}
	}
	return xmlQ > 0 && xmlQ > jsonQ
}

// toXML renders a JSON document as YARN's XML. A top-level list is
// wrapped in listRoot, each element named listItem.
func toXML(doc []byte, listRoot, listItem string) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var out bytes.Buffer
	out.WriteString(`<?xml version="1.0" encoding="UTF-8" standalone="yes"?>`)
	enc := xml.NewEncoder(&out)
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		key, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, ok := key.(string)
		if !ok {
			return nil, errors.New("the document has no root key")
		}
		v, err := dec.Token()
		if err != nil {
			return nil, err
		}
		if err := xmlValue(enc, dec, name, v); err != nil {
			return nil, err
		}
	case json.Delim('['):
		root := xml.StartElement{Name: xml.Name{Local: listRoot}}
		enc.EncodeToken(root)
		if err := xmlList(enc, dec, listItem); err != nil {
			return nil, err
		}
		enc.EncodeToken(root.End())
	default:
		return nil, errors.New("the document is not an object or a list")
	}
	if err := enc.Flush(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// xmlValue writes the value that begins with tok as element(s) name: an
// object as one element of its fields, a list as repeated elements, null
// as nothing.
func xmlValue(enc *xml.Encoder, dec *json.Decoder, name string, tok json.Token) error {
	start := xml.StartElement{Name: xml.Name{Local: name}}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			enc.EncodeToken(start)
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				v, err := dec.Token()
				if err != nil {
					return err
				}
				if err := xmlValue(enc, dec, k.(string), v); err != nil {
					return err
				}
			}
			if _, err := dec.Token(); err != nil { // }
				return err
			}
			return enc.EncodeToken(start.End())
		case '[':
			return xmlList(enc, dec, name)
		}
		return errors.New("unexpected " + t.String())
	case nil:
		return nil
	case string:
		return enc.EncodeElement(t, start)
	case json.Number:
		return enc.EncodeElement(t.String(), start)
	case bool:
		return enc.EncodeElement(strconv.FormatBool(t), start)
	}
	return errors.New("unexpected JSON token")
}

// xmlList writes a list's elements, each as name, after its '['.
func xmlList(enc *xml.Encoder, dec *json.Decoder, name string) error {
	for dec.More() {
		v, err := dec.Token()
		if err != nil {
			return err
		}
		if err := xmlValue(enc, dec, name, v); err != nil {
			return err
		}
	}
	_, err := dec.Token() // ]
	return err
}

// writeAnswer writes v as JSON, or as XML when the request prefers it.
// listRoot and listItem name a top-level list's XML elements.
func writeAnswer(w http.ResponseWriter, r *http.Request, status int, v any, listRoot, listItem string) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"RemoteException":{"exception":"WebApplicationException","message":"cannot encode the answer","javaClassName":"` + classWebAppFailure + `"}}`)
	}
	w.Header().Add("Vary", "Accept")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if r != nil && wantsXML(r) {
		if x, err := toXML(b, listRoot, listItem); err == nil {
			w.Header().Set("Content-Type", "application/xml; charset=utf-8")
			w.WriteHeader(status)
			w.Write(x)
			return
		}
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	io.Copy(w, bytes.NewReader(b))
}

// writeOK answers 200 with v, which is no list.
func writeOK(w http.ResponseWriter, r *http.Request, v any) {
	writeAnswer(w, r, http.StatusOK, v, "", "")
}
