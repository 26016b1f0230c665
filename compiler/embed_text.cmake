# cmake -DIN=FILE -DOUT=FILE.inc -DNAME=IDENT -P embed_text.cmake
#
# Writes `static const char NAME[] = "...";`, the text of IN as one C string literal per line, so
# that a C file can #include it (compiler/aot_prelude.h into tilec's generated headers).
file(READ "${IN}" text)
string(REPLACE "\\" "\\\\" text "${text}")
string(REPLACE "\"" "\\\"" text "${text}")
string(REPLACE "?" "\\?" text "${text}")
string(REPLACE "\t" "\\t" text "${text}")
string(REPLACE "\n" "\\n\"\n\"" text "${text}")
file(WRITE "${OUT}" "/* generated from ${IN} by compiler/embed_text.cmake: do not edit */\nstatic const char ${NAME}[] =\n\"${text}\";\n")
