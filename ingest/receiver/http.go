package receiver

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// OTLP/HTTP's two encodings.
const (
	typeProto = "application/x-protobuf"
	typeJSON  = "application/json"
)

func (r *Receiver) httpHandler(s signal) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ct, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
		asJSON := ct == typeJSON
		if req.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			r.refuse(w, s, http.StatusMethodNotAllowed, asJSON, 0, "OTLP/HTTP takes POST")
			return
		}
		if ct != typeJSON && ct != typeProto {
			r.refuse(w, s, http.StatusUnsupportedMediaType, false, 0,
				fmt.Sprintf("Content-Type %q: OTLP/HTTP takes %s or %s", ct, typeProto, typeJSON))
			return
		}
		if !r.authorized(req.Header.Get("Authorization")) {
			w.Header().Set("WWW-Authenticate", "Bearer")
			r.refuse(w, s, http.StatusUnauthorized, asJSON, 0, "a bearer token is required")
			return
		}
		if !r.slot() {
			r.refuse(w, s, http.StatusTooManyRequests, asJSON, retryBusy, ErrBusy.Error())
			return
		}
		defer r.release()
		body, code, msg := r.readBody(req)
		if code != 0 {
			r.refuse(w, s, code, asJSON, 0, msg)
			return
		}
		p, err := s.decode(body, asJSON)
		if err != nil {
			r.refuse(w, s, http.StatusBadRequest, asJSON, 0, "the payload is not an OTLP "+s.name+" export request: "+err.Error())
			return
		}
		rejected, why, err := r.accept(s, p)
		switch {
		case errors.Is(err, ErrBusy):
			r.refuse(w, s, http.StatusTooManyRequests, asJSON, retryBusy, err.Error())
			return
		case errors.Is(err, ErrFull):
			r.refuse(w, s, http.StatusServiceUnavailable, asJSON, retryFull, err.Error())
			return
		case err != nil:
			r.refuse(w, s, http.StatusInternalServerError, asJSON, 0, err.Error())
			return
		}
		out, err := p.response(rejected, why, asJSON)
		if err != nil {
			r.refuse(w, s, http.StatusInternalServerError, asJSON, 0, err.Error())
			return
		}
		w.Header().Set("Content-Type", contentType(asJSON))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(out)
	})
}

// readBody reads the request's body, gunzipped, up to the limit: the
// body, or the status to refuse it with and why.
func (r *Receiver) readBody(req *http.Request) ([]byte, int, string) {
	var in io.Reader = http.MaxBytesReader(nil, req.Body, r.cfg.MaxBody+1)
	switch enc := req.Header.Get("Content-Encoding"); enc {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(in)
		if err != nil {
			return nil, http.StatusBadRequest, "Content-Encoding gzip, but the body is not gzip: " + err.Error()
		}
		defer zr.Close()
		in = zr
	default:
		return nil, http.StatusUnsupportedMediaType, fmt.Sprintf("Content-Encoding %q: gzip or none", enc)
	}
	body, err := io.ReadAll(io.LimitReader(in, r.cfg.MaxBody+1))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig) || int64(len(body)) > r.cfg.MaxBody:
		return nil, http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is over %d bytes (after decompression): send smaller batches", r.cfg.MaxBody)
	case err != nil:
		return nil, http.StatusBadRequest, "reading the body: " + err.Error()
	}
	return body, 0, ""
}

func contentType(asJSON bool) string {
	if asJSON {
		return typeJSON
	}
	return typeProto
}

// refuse answers with a google.rpc.Status body in the request's
// encoding, and Retry-After when the client should come back.
func (r *Receiver) refuse(w http.ResponseWriter, s signal, code int, asJSON bool, retryAfter int, msg string) {
	r.Stats.Refused.Add(1)
	r.cfg.Logf("refused a %s request: %d %s", s.name, code, msg)
	st := &spb.Status{Code: int32(grpcCodeOf(code)), Message: msg}
	var b []byte
	if asJSON {
		b, _ = protojson.Marshal(st)
	} else {
		b, _ = proto.Marshal(st)
	}
	w.Header().Set("Content-Type", contentType(asJSON))
	if retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	}
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

// grpcCodeOf is the gRPC code matching an HTTP status, as the Status
// message's code field wants (google.rpc.Code).
func grpcCodeOf(httpCode int) int {
	switch httpCode {
	case http.StatusBadRequest, http.StatusUnsupportedMediaType, http.StatusMethodNotAllowed:
		return 3 // INVALID_ARGUMENT
	case http.StatusUnauthorized:
		return 16 // UNAUTHENTICATED
	case http.StatusRequestEntityTooLarge, http.StatusTooManyRequests:
		return 8 // RESOURCE_EXHAUSTED
	case http.StatusServiceUnavailable:
		return 14 // UNAVAILABLE
	}
	return 13 // INTERNAL
}
