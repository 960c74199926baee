// Package mongoerr holds the one table of MongoDB error codes that Mayfly
// answers with, and the Error type that carries a code to the wire.
//
// Lower layers return their own sentinel errors; only the command layer turns
// them into *Error values, so this table is the single place where a code
// number and its name are written down.
package mongoerr

import (
	"errors"
	"fmt"
)

// Code is a MongoDB error code.
type Code int32

// The codes Mayfly emits. Names match MongoDB's error_codes.yml.
const (
	InternalError                            Code = 1
	BadValue                                 Code = 2
	NoSuchKey                                Code = 4
	GraphContainsCycle                       Code = 5
	UnknownError                             Code = 8
	FailedToParse                            Code = 9
	Unauthorized                             Code = 13
	TypeMismatch                             Code = 14
	Overflow                                 Code = 15
	InvalidLength                            Code = 16
	AuthenticationFailed                     Code = 18
	IllegalOperation                         Code = 20
	LockBusy                                 Code = 46
	NamespaceNotFound                        Code = 26
	IndexNotFound                            Code = 27
	PathNotViable                            Code = 28
	ConflictingUpdateOperators               Code = 40
	CursorNotFound                           Code = 43
	NamespaceExists                          Code = 48
	MaxTimeMSExpired                         Code = 50
	DollarPrefixedFieldName                  Code = 52
	InvalidIDField                           Code = 53
	NotSingleValueField                      Code = 54
	CommandNotFound                          Code = 59
	ImmutableField                           Code = 66
	CannotCreateIndex                        Code = 67
	IndexAlreadyExists                       Code = 68
	InvalidOptions                           Code = 72
	InvalidNamespace                         Code = 73
	IndexOptionsConflict                     Code = 85
	IndexKeySpecsConflict                    Code = 86
	CannotSplit                              Code = 87
	InvalidBSON                              Code = 22
	NetworkTimeout                           Code = 89
	OperationFailed                          Code = 96
	ProtocolError                            Code = 17
	WriteConflict                            Code = 112
	CommandNotSupported                      Code = 115
	ConflictingOperationInProgress           Code = 117
	NamespaceNotSharded                      Code = 118
	DocumentValidationFailure                Code = 121
	CommandFailed                            Code = 125
	CappedPositionLost                       Code = 136
	QueryPlanKilled                          Code = 175
	CommandNotSupportedOnView                Code = 166
	OptionNotSupportedOnView                 Code = 167
	InvalidPipelineOperator                  Code = 168
	CannotImplicitlyCreateCollection         Code = 227
	AmbiguousIndexKeyPattern                 Code = 181
	ClientMetadataCannotBeMutated            Code = 186
	InvalidIndexSpecificationOption          Code = 197
	IllegalOpMsgFlag                         Code = 223
	QueryFeatureNotAllowed                   Code = 224
	NoSuchTransaction                        Code = 251
	OperationNotSupportedInTransaction       Code = 263
	Interrupted                              Code = 11601
	UnsupportedOpQueryCommand                Code = 352
	APIStrictError                           Code = 323
	NotWritablePrimary                       Code = 10107
	DuplicateKey                             Code = 11000
	QueryExceededMemoryLimitNoDiskUseAllowed Code = 292
	ExceededMemoryLimit                      Code = 146
	Location16755                            Code = 16755
	Location31254                            Code = 31254
	Location40414                            Code = 40414
	Location40415                            Code = 40415
	Location15974                            Code = 15974
	Location15973                            Code = 15973
	Location15998                            Code = 15998
	Location17276                            Code = 17276
	Location16410                            Code = 16410
	Location16554                            Code = 16554
	Location31253                            Code = 31253
	Location40324                            Code = 40324
	Location40323                            Code = 40323
	Location40352                            Code = 40352
	Location51024                            Code = 51024
	Location50736                            Code = 50736
	Location50737                            Code = 50737
	Location50738                            Code = 50738
	DatabaseDifferCase                       Code = 13297
	Location16493                            Code = 16493
	InterruptedAtShutdown                    Code = 11600
	ClientDisconnect                         Code = 279
	NotImplemented                           Code = 238
	EmptyFieldName                           Code = 56
	CannotBackfillArray                      Code = 34
	ConversionFailure                        Code = 241
	BSONObjectTooLarge                       Code = 10334
	OutOfDiskSpace                           Code = 14031
	CannotIndexParallelArrays                Code = 171
)

var names = map[Code]string{
	InternalError:                            "InternalError",
	BadValue:                                 "BadValue",
	NoSuchKey:                                "NoSuchKey",
	GraphContainsCycle:                       "GraphContainsCycle",
	UnknownError:                             "UnknownError",
	FailedToParse:                            "FailedToParse",
	Unauthorized:                             "Unauthorized",
	TypeMismatch:                             "TypeMismatch",
	Overflow:                                 "Overflow",
	InvalidLength:                            "InvalidLength",
	ProtocolError:                            "ProtocolError",
	AuthenticationFailed:                     "AuthenticationFailed",
	IllegalOperation:                         "IllegalOperation",
	InvalidBSON:                              "InvalidBSON",
	NamespaceNotFound:                        "NamespaceNotFound",
	IndexNotFound:                            "IndexNotFound",
	PathNotViable:                            "PathNotViable",
	ConflictingUpdateOperators:               "ConflictingUpdateOperators",
	CursorNotFound:                           "CursorNotFound",
	LockBusy:                                 "LockBusy",
	NamespaceExists:                          "NamespaceExists",
	MaxTimeMSExpired:                         "MaxTimeMSExpired",
	DollarPrefixedFieldName:                  "DollarPrefixedFieldName",
	InvalidIDField:                           "InvalidIdField",
	NotSingleValueField:                      "NotSingleValueField",
	CommandNotFound:                          "CommandNotFound",
	ImmutableField:                           "ImmutableField",
	CannotCreateIndex:                        "CannotCreateIndex",
	IndexAlreadyExists:                       "IndexAlreadyExists",
	InvalidOptions:                           "InvalidOptions",
	InvalidNamespace:                         "InvalidNamespace",
	IndexOptionsConflict:                     "IndexOptionsConflict",
	IndexKeySpecsConflict:                    "IndexKeySpecsConflict",
	CannotSplit:                              "CannotSplit",
	NetworkTimeout:                           "NetworkTimeout",
	OperationFailed:                          "OperationFailed",
	WriteConflict:                            "WriteConflict",
	CommandNotSupported:                      "CommandNotSupported",
	ConflictingOperationInProgress:           "ConflictingOperationInProgress",
	NamespaceNotSharded:                      "NamespaceNotSharded",
	DocumentValidationFailure:                "DocumentValidationFailure",
	CommandFailed:                            "CommandFailed",
	CappedPositionLost:                       "CappedPositionLost",
	QueryPlanKilled:                          "QueryPlanKilled",
	DatabaseDifferCase:                       "DatabaseDifferCase",
	InterruptedAtShutdown:                    "InterruptedAtShutdown",
	ClientDisconnect:                         "ClientDisconnect",
	ExceededMemoryLimit:                      "ExceededMemoryLimit",
	CommandNotSupportedOnView:                "CommandNotSupportedOnView",
	OptionNotSupportedOnView:                 "OptionNotSupportedOnView",
	InvalidPipelineOperator:                  "InvalidPipelineOperator",
	AmbiguousIndexKeyPattern:                 "AmbiguousIndexKeyPattern",
	ClientMetadataCannotBeMutated:            "ClientMetadataCannotBeMutated",
	InvalidIndexSpecificationOption:          "InvalidIndexSpecificationOption",
	IllegalOpMsgFlag:                         "IllegalOpMsgFlag",
	QueryFeatureNotAllowed:                   "QueryFeatureNotAllowed",
	CannotImplicitlyCreateCollection:         "CannotImplicitlyCreateCollection",
	NotImplemented:                           "NotImplemented",
	EmptyFieldName:                           "EmptyFieldName",
	CannotBackfillArray:                      "CannotBackfillArray",
	ConversionFailure:                        "ConversionFailure",
	BSONObjectTooLarge:                       "BSONObjectTooLarge",
	OutOfDiskSpace:                           "OutOfDiskSpace",
	CannotIndexParallelArrays:                "CannotIndexParallelArrays",
	NoSuchTransaction:                        "NoSuchTransaction",
	OperationNotSupportedInTransaction:       "OperationNotSupportedInTransaction",
	QueryExceededMemoryLimitNoDiskUseAllowed: "QueryExceededMemoryLimitNoDiskUseAllowed",
	APIStrictError:                           "APIStrictError",
	UnsupportedOpQueryCommand:                "UnsupportedOpQueryCommand",
	NotWritablePrimary:                       "NotWritablePrimary",
	DuplicateKey:                             "DuplicateKey",
	Interrupted:                              "Interrupted",
}

// Name returns MongoDB's codeName for c. Codes that MongoDB reports as
// assertion locations (no entry in error_codes.yml) are named "Location<N>".
func (c Code) Name() string {
	if n, ok := names[c]; ok {
		return n
	}
	return fmt.Sprintf("Location%d", int32(c))
}

// Error is a MongoDB-style command error: it becomes
// {ok: 0, errmsg, code, codeName} at the wire.
type Error struct {
	Code Code
	Msg  string
	// Extra holds fields MongoDB adds beside errmsg for this error, such as
	// keyPattern and keyValue for duplicate keys. Values are BSON-marshalable.
	Extra []KV
}

// KV is one extra reply field; kept as a slice to preserve MongoDB's order.
type KV struct {
	Key   string
	Value any
}

func (e *Error) Error() string { return fmt.Sprintf("%s (%d): %s", e.Code.Name(), e.Code, e.Msg) }

// New returns an *Error with the given code and message.
func New(code Code, msg string) *Error { return &Error{Code: code, Msg: msg} }

// Newf returns an *Error with a formatted message.
func Newf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// As extracts an *Error from err; errors without a code become InternalError
// so that nothing reaches a client without one.
func As(err error) *Error {
	if err == nil {
		return nil
	}
	var me *Error
	if errors.As(err, &me) {
		return me
	}
	return &Error{Code: InternalError, Msg: err.Error()}
}
