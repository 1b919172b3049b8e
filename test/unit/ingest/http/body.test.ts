import { test } from "uvu";
import * as assert from "uvu/assert";
import { bodyCharset } from "../../../../ingest/http/charset";

test("no charset, UTF-8 and US-ASCII labels are read as UTF-8, whatever their case and spaces", () => {
  for (const label of ["", "utf-8", "UTF-8", " utf8 ", "us-ascii", "ASCII", "ANSI_X3.4-1968"]) assert.is(bodyCharset(label), "utf8", label);
});

test("Latin-1 labels are read as Windows-1252 (WHATWG Encoding)", () => {
  for (const label of ["iso-8859-1", "ISO-8859-1", "latin1", "l1", "windows-1252", "cp1252", "iso_8859-1:1987", "x-cp1252"])
    assert.is(bodyCharset(label), "windows-1252", label);
});

test("other charsets are refused, not guessed", () => {
  for (const label of ["utf-16", "utf-16le", "utf-32", "iso-8859-2", "shift_jis", "utf-7", "koi8-r", "x-user-defined", "latin2"])
    assert.is(bodyCharset(label), undefined, label);
});

test.run();
