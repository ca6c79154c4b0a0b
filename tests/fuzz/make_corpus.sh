#!/usr/bin/env bash
# make_corpus.sh — (re)writes the seed corpora under tests/fuzz/corpus/ (committed).
# Seeds are the SDK requests and bodies of the MNS protocol notes (§3.4 vectors, §4, §7),
# the query strings of §1.2/§1.3, receipt handles made with the fuzz targets' fixed handle
# keys (fuzz_common.c), and RFC 1123 dates.  Every request seed is signed here with
# openssl, independently of smqd's C code; the sixteen §3.4 vectors must come out with the
# documented signatures or the script fails.  Needs bash, coreutils and openssl.
set -euo pipefail
cd "$(dirname "$0")"
out=corpus
# Only the targets made here: fuzz_admin's and fuzz_notify's seeds are kept by hand.
rm -rf "$out"/{fuzz_xml,fuzz_query,fuzz_sts,fuzz_handle,fuzz_request,fuzz_topic}
mkdir -p "$out"/{fuzz_xml,fuzz_query,fuzz_sts,fuzz_handle,fuzz_request,fuzz_topic}

AK=testAccessKeyId SK=testAccessKeySecret
AK2=other-team SK2=another-secret
DATE='Tue, 02 Jan 2024 03:04:05 GMT'
HOST='1234567890123456.mns.cn-hangzhou.aliyuncs.com'
NS='xmlns="http://mns.aliyuncs.com/doc/v1/"'
DECL='<?xml version="1.0" encoding="utf-8"?>'
H8='8-0zxjHBaWtzPz8zphz0z6OGz5yWWidU1fJM'        # a real-service handle (§6.1)

seed() { printf '%s' "$2" >"$out/$1"; }          # seed DIR/NAME CONTENT

# ---- receipt handles: base64url(seq(8) | gen(4) | HMAC-SHA1(secret, seq|gen)[0:8]) ----
hexkey=$(for i in $(seq 0 31); do printf '%02x' $(( (i * 13 + 1) & 255 )); done)
unhex() { printf "$(sed 's/../\\x&/g')"; }
tohex() { od -An -v -tx1 | tr -d ' \n'; }
handle() {   # handle SEQ GEN
  local msg mac
  msg=$(printf '%016x%08x' "$1" "$2")
  mac=$(printf '%s' "$msg" | unhex | openssl dgst -sha1 -mac HMAC -macopt "hexkey:$hexkey" -binary \
        | head -c 8 | tohex)
  printf '%s%s' "$msg" "$mac" | unhex | base64 -w0 | tr '+/' '-_' | tr -d '='
}
HA=$(handle 1 1)
HB=$(handle 2 1)
HC=$(handle 123456789 7)
for sg in "1 1" "2 1" "1 2" "0 0" "123456789 7" "4294967296 3" "9223372036854775807 1" \
          "18446744073709551615 4294967295"; do
  set -- $sg
  seed "fuzz_handle/seq$1-gen$2" "$(handle "$1" "$2")"
done
seed fuzz_handle/real-service "$H8"
seed fuzz_handle/docs-base64 'MbZj6wDWli+QEauMZc8ZRv37sIW2iJKq3M9Mx/KSbkJ0'
seed fuzz_handle/old-format '1-ODU4OTkzNDU5My0xNDM1MTk3NjAwLTItNg=='

# ---- request bodies (§3.4 B2/B3/B8, §4, §7) ----
B2="$DECL<Message $NS><MessageBody>Hello MNS</MessageBody><Priority>8</Priority></Message>"
B3="$DECL<Message $NS><MessageBody>SGVsbG8gTU5T</MessageBody><DelaySeconds>5</DelaySeconds></Message>"
B8="$DECL<Queue $NS><VisibilityTimeout>60</VisibilityTimeout></Queue>"
N2='<?xml version="1.0" encoding="UTF-8"?>'"<Message $NS><MessageBody>Hello MNS</MessageBody><Priority>8</Priority></Message>"
QALL="<Queue $NS><DelaySeconds>0</DelaySeconds><MaximumMessageSize>65536</MaximumMessageSize><MessageRetentionPeriod>345600</MessageRetentionPeriod><VisibilityTimeout>30</VisibilityTimeout><PollingWaitSeconds>0</PollingWaitSeconds><LoggingEnabled>True</LoggingEnabled></Queue>"
QEMPTY="<Queue $NS></Queue>"
QJAVA='<?xml version="1.0" encoding="UTF-8" standalone="no"?><Queue xmlns="http://mns.aliyuncs.com/doc/v1"><DelaySeconds>0</DelaySeconds><LoggingEnabled>false</LoggingEnabled></Queue>'
SGO='<Message><MessageBody>hello from go</MessageBody><DelaySeconds>0</DelaySeconds><Priority>0</Priority></Message>'
SJAVA='<?xml version="1.0" encoding="UTF-8" standalone="no"?><Message xmlns="http://mns.aliyuncs.com/doc/v1"><MessageBody>SGk=</MessageBody><UserProperties><PropertyValue><Name>k</Name><Value>v</Value><Type>STRING</Type></PropertyValue></UserProperties><MessageGroupId>g1</MessageGroupId></Message>'
SCN="<Message $NS><MessageBody><![CDATA[a<b]]>&amp;&lt;&gt;&#13;&#10;&#x10FFFF; I am 测试字符串.</MessageBody></Message>"
SPFX='<m:Message xmlns:m="http://mns.aliyuncs.com/doc/v1/"><m:MessageBody> p </m:MessageBody><m:Priority>16</m:Priority></m:Message>'
BATCH="<Messages $NS><Message><MessageBody>a</MessageBody></Message><Message><MessageBody>b &amp; c</MessageBody><DelaySeconds>604800</DelaySeconds><Priority>1</Priority></Message></Messages>"
HANDLES="<ReceiptHandles $NS><ReceiptHandle>$HA</ReceiptHandle><ReceiptHandle> $HB
</ReceiptHandle><ReceiptHandle>$H8</ReceiptHandle></ReceiptHandles>"
DTD='<!DOCTYPE Message [<!ENTITY e "x">]><Message><MessageBody>&e;</MessageBody></Message>'
ERRDOC='<?xml version="1.0" encoding="UTF-8"?><Error xmlns="http://mns.aliyuncs.com/doc/v1"><Code>QueueNotExist</Code><Message>The queue name you provided is not exist.</Message><RequestId>512B2A634403E52B1956133E</RequestId><HostId>http://1234567890123456.mns.cn-hangzhou.aliyuncs.com</HostId></Error>'
for x in B2 B3 B8 N2 QALL QEMPTY QJAVA SGO SJAVA SCN SPFX BATCH HANDLES DTD ERRDOC; do
  seed "fuzz_xml/$(tr 'A-Z' 'a-z' <<<"$x").xml" "${!x}"
done

# ---- topic bodies (§13.4.1, §13.6, §13.13), as each SDK sends them, and the traps ----
TPY="$DECL<Topic $NS><LoggingEnabled>True</LoggingEnabled></Topic>"
TGO="<Topic $NS><MaximumMessageSize>65536</MaximumMessageSize><LoggingEnabled>false</LoggingEnabled></Topic>"
TRET="<Topic><MessageRetentionPeriod>86400</MessageRetentionPeriod><MaximumMessageSize> 1024 </MaximumMessageSize></Topic>"
SPY="$DECL<Subscription $NS><NotifyStrategy>BACKOFF_RETRY</NotifyStrategy><Endpoint>acs:mns:cn-hangzhou:1000000000000000:queues/q1</Endpoint><FilterTag>important</FilterTag><NotifyContentFormat>XML</NotifyContentFormat></Subscription>"
SGO_SUB="<Subscription><Endpoint>http://10.0.0.5:8000/hook</Endpoint><FilterTag></FilterTag><NotifyStrategy>EXPONENTIAL_DECAY_RETRY</NotifyStrategy><NotifyContentFormat>JSON</NotifyContentFormat></Subscription>"
SJAVA_SUB='<?xml version="1.0" encoding="UTF-8" standalone="no"?><Subscription xmlns="http://mns.aliyuncs.com/doc/v1"><NotifyContentFormat>SIMPLIFIED</NotifyContentFormat><Endpoint> https://[::1]:8443/n?x=1 </Endpoint><NotifyStrategy>backoff_retry</NotifyStrategy></Subscription>'
SSET="<Subscription><NotifyStrategy>EXPONENTIAL_DECAY_RETRY</NotifyStrategy><FilterTag>测试字符串测试字符串测试字符串测试</FilterTag></Subscription>"
SDLQN="<Subscription><Endpoint>http://h/</Endpoint><DlqPolicy><Enabled>true</Enabled><DeadLetterTargetQueue>hook-dlq</DeadLetterTargetQueue></DlqPolicy></Subscription>"
SDLQF="<Subscription><Endpoint>http://h/</Endpoint><DlqEnabled>True</DlqEnabled><DlqTargetQueue>hook-dlq</DlqTargetQueue></Subscription>"
SDLQBOTH="<Subscription><DlqTargetQueue>d</DlqTargetQueue><DlqPolicy><DeadLetterTargetQueue>d</DeadLetterTargetQueue></DlqPolicy></Subscription>"
SDLQOFF="<Subscription><DlqPolicy><Enabled>false</Enabled></DlqPolicy></Subscription>"
SMAIL="<m:Subscription xmlns:m=\"http://mns.aliyuncs.com/doc/v1/\"><m:Endpoint>mail:directmail:a@b.c</m:Endpoint></m:Subscription>"
# PublishMessage's <Message> (§13.5): each SDK's shape, the ignored parts, the tag's bounds.
PPY="$DECL<Message $NS><MessageBody>hello world</MessageBody><MessageTag>important</MessageTag><MessageAttributes><DirectMail>{\"AccountName\":\"a@b.c\",\"Subject\":\"s\",\"AddressType\":0,\"IsHtml\":0,\"ReplyToAddress\":0}</DirectMail></MessageAttributes></Message>"
PGO="<Message><MessageBody>hello from go</MessageBody><MessageTag></MessageTag><MessageAttributes><DirectSMS>{\"FreeSignName\":\"x\",\"TemplateCode\":\"t\",\"Type\":\"singleContent\",\"Receiver\":\"1\",\"SmsParams\":\"{}\"}</DirectSMS></MessageAttributes></Message>"
PJAVA='<?xml version="1.0" encoding="UTF-8" standalone="no"?><Message xmlns="http://mns.aliyuncs.com/doc/v1"><MessageAttributes><DM>{}</DM><DYSMS>{}</DYSMS></MessageAttributes><MessageBody>SGVsbG8=</MessageBody><UserProperties><PropertyValue><Name>k</Name><Value>v</Value><Type>STRING</Type></PropertyValue></UserProperties><SystemProperties/><MessageGroupId>g1</MessageGroupId></Message>'
PJNULL='<Message><MessageBody></MessageBody><MessageAttributes></MessageAttributes></Message>'
PTAG16="<Message><MessageBody><![CDATA[a<b]]>&amp;&#13;&#x10FFFF; 测试</MessageBody><MessageTag>😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀</MessageTag></Message>"
PTAG17='<Message><MessageBody>b</MessageBody><MessageTag>abcdefghijklmnopq</MessageTag></Message>'
PBATCH='<Messages><Message><MessageBody>b</MessageBody></Message></Messages>'
for x in TPY TGO TRET SPY SGO_SUB SJAVA_SUB SSET SDLQN SDLQF SDLQBOTH SDLQOFF SMAIL \
         PPY PGO PJAVA PJNULL PTAG16 PTAG17 PBATCH; do
  seed "fuzz_topic/$(tr 'A-Z' 'a-z' <<<"$x").xml" "${!x}"
done

# ---- query strings (§1.2, §1.3) and queue names (§5) ----
i=0
for q in 'waitseconds=10' 'waitseconds=0' 'numOfMessages=16&waitseconds=10' 'peekonly=true' \
         'peekonly=true&numOfMessages=16' 'numOfMessages=16&peekonly=true' \
         "ReceiptHandle=$H8&VisibilityTimeout=60" "receiptHandle=$H8&visibilityTimeout=60" \
         "ReceiptHandle=$H8" "ReceiptHandle=$HC" 'metaoverride=true' 'metaOverride=true' \
         'accountmeta=true' 'ReceiptHandle=MbZj6wDWli%2BQEauMZc8ZRv37sIW2iJKq3M9Mx%2FKSbkJ0' \
         'receiptHandle=MbZj6wDWli+QEauMZc8ZRv37sIW2iJKq3M9Mx/KSbkJ0' \
         'ReceiptHandle=1-ODU4OTkzNDU5My0xNDM1MTk3NjAwLTItNg==' 'TestQueue' 'a&&b=&=c&%41%62' \
         "$(printf 'q%.0s' $(seq 120))"; do
  seed "fuzz_query/q$((i++))" "$q"
done

# ---- signed requests: METHOD \0 TARGET \0 Name:value \0 ... \0 \0 BODY (fuzz_common.h) ----
trim() { local s=$1; s=${s#"${s%%[![:blank:]]*}"}; s=${s%"${s##*[![:blank:]]}"}; printf '%s' "$s"; }
lc() { tr 'A-Z' 'a-z' <<<"$1"; }
md5_sdk() { printf '%s' "$1" | openssl dgst -md5 -r | cut -c1-32 | tr -d '\n' | base64 -w0; }

# request NAME KEY METHOD TARGET BODY EXPECTED-SIG|- HEADER...   (Authorization is added)
request() {
  local name=$1 key=$2 method=$3 target=$4 body=$5 want=$6; shift 6
  local md5="" ctype="" date="" xdate="" mns="" h n v id secret sts sig
  for h in "$@"; do
    n=$(lc "${h%%:*}"); v=$(trim "${h#*:}")
    case $n in
      content-md5) md5=$v ;;
      content-type) ctype=$v ;;
      date) date=$v ;;
    esac
    [ "$n" = x-mns-date ] && xdate=$v
    [[ $n == x-mns-* ]] && mns+="$n:$v"$'\n'
  done
  [ -n "$date" ] || date=$xdate
  mns=$(printf '%s' "$mns" | LC_ALL=C sort)
  [ -z "$mns" ] || mns+=$'\n'
  if [ "$key" = 2 ]; then id=$AK2 secret=$SK2; else id=$AK secret=$SK; fi
  sts=$(printf '%s\n%s\n%s\n%s\n%s%s' "$method" "$md5" "$ctype" "$date" "$mns" "$target"; printf x)
  sts=${sts%x}
  sig=$(printf '%s' "$sts" | openssl dgst -sha1 -hmac "$secret" -binary | base64)
  if [ "$want" != - ] && [ "$sig" != "$want" ]; then
    echo "make_corpus: $name signs as $sig, the protocol notes say $want" >&2
    exit 1
  fi
  for d in fuzz_sts fuzz_request; do
    { printf '%s\0%s\0' "$method" "$target"
      for h in "$@"; do printf '%s\0' "$h"; done
      printf 'Authorization:MNS %s:%s\0\0%s' "$id" "$sig" "$body"; } >"$out/$d/$name"
  done
}

PY=("host:$HOST" "date:$DATE" "x-mns-version:2015-06-06")
PYB=("${PY[@]}" "content-type:text/xml;charset=UTF-8")
NODE=("host:$HOST" "date:$DATE" "x-mns-date:$DATE" "x-mns-version:2015-06-06")
JAVA=("Host:$HOST" "Date:$DATE" "x-mns-version:2015-06-06" "Content-Type:text/xml;charset=UTF-8")
GO=("Host:$HOST" "Date:$DATE" "X-Mns-Version:2015-06-06" "Content-Type:application/xml")
Q=/queues/TestQueue
M=$Q/messages

# The §3.4 vectors, with the signatures the SDKs computed.
request p1 1 GET $Q '' ic27RTdtzgYUsETAe6H7LEbw7uI= "${PY[@]}"
request p2 1 POST $M "$B2" BaP9qYltiNgG638EzFnCNgUkYCY= "${PYB[@]}" \
  "content-md5:NGM5MmM2NTEyNjAyMTUxOTM0ZDJiMWE2MzEzYjI1YTY=" "content-length:155"
request p3 1 POST $M "$B3" aygMsDK8GAo6/vB7475BWs7o+ec= "${PYB[@]}" \
  "content-md5:YjYxMjk2MjYwYTlmNTcxZTIwMGU0ZmIyOTNkZjE5NDg="
request p4 1 GET "$M?waitseconds=10" '' AdsBR0spEnSbgnzONY5bx0SSuXI= "${PY[@]}" \
  "x-mns-user-request-id:req-0001"
request p5 1 GET /queues '' ROCdi2ClOg+hI07Y8/ZHtROHFWA= "${PY[@]}" "x-mns-prefix:Test" \
  "x-mns-ret-number:10" "x-mns-marker:m1" "x-mns-with-meta:true"
request p6 1 PUT "$M?ReceiptHandle=$H8&VisibilityTimeout=60" '' slo463R8g8osW109WHhsRlsdFgA= "${PY[@]}"
request p7 1 DELETE "$M?ReceiptHandle=$H8" '' 4HtPpXzCVLfaivXtkzwN8Nds/mg= "${PY[@]}"
request p8 1 PUT "$Q?metaoverride=true" "$B8" YhNPdXTcw0liQPJabJ84UMF0mFE= "${PYB[@]}" \
  "content-md5:MTcyN2Q5MGRjYzYwZTg2MTQ1ODE3MTE3MjM2MzAwNzY="
request p9 1 GET "$M?peekonly=true&numOfMessages=16" '' qj+Fb2J0mnmCXJQ0bOgO/SiUZXU= "${PY[@]}" \
  "security-token:STS.token-value"
request n1 1 GET $Q '' RE6D6eeLvk+iieV43b9yshaKHFk= "${NODE[@]}"
request n2 1 POST $M "$N2" EbyOmMGGh/pdeKQ1TiYJB0W3XDs= "${NODE[@]}" "content-type:text/xml" \
  "content-md5:MDUxOGMxZTE4NzdmNTFiOGUwZGUzMDlmMDAzNjczZmY="
request n3 1 PUT "$M?receiptHandle=$H8&visibilityTimeout=60" '' n9CpoD6jiXZZoc20sELXUyqoY7Q= \
  "${NODE[@]}" "content-type:text/xml" "content-md5:ZDQxZDhjZDk4ZjAwYjIwNGU5ODAwOTk4ZWNmODQyN2U="
request n4 1 DELETE "$M?ReceiptHandle=$H8" '' qBPFZdhCHTiYn0rH4ny5YBDVKZQ= "${NODE[@]}" \
  "content-type:text/xml" "content-md5:ZDQxZDhjZDk4ZjAwYjIwNGU5ODAwOTk4ZWNmODQyN2U="
request j1 1 GET $Q '' pi0pQ9WwRTmZ9kM2B8jQUSgKrUw= "${JAVA[@]}"
request j2 1 PUT "$M?ReceiptHandle=$H8&VisibilityTimeout=60" '' 032ZAiew3z+VJ5l8o9CEBIuJzFs= \
  "${JAVA[@]}"
request j3 1 GET "$M?numOfMessages=16&waitseconds=10" '' OiugIBRW9X6cxFrXrmr1cyYKnqM= "${JAVA[@]}"

# Every other action of §1.2, as the SDKs send it, with handles smqd would accept.
request node_send 1 POST $M "$N2" - "${NODE[@]}" "content-type:text/xml" "content-md5:$(md5_sdk "$N2")"
request node_visibility 1 PUT "$M?receiptHandle=$HA&visibilityTimeout=60" '' - "${NODE[@]}" \
  "content-type:text/xml" "content-md5:$(md5_sdk '')"
request py_create_all 1 PUT $Q "$QALL" - "${PYB[@]}" "content-md5:$(md5_sdk "$QALL")"
request py_create_empty 1 PUT /queues/orders "$QEMPTY" - "${PYB[@]}"
request java_create 2 PUT /queues/q-1 "$QJAVA" - "${JAVA[@]}"
request java_send_props 1 POST $M "$SJAVA" - "${JAVA[@]}"
request go_send 1 POST $M "$SGO" - "${GO[@]}" "Content-Md5:$(md5_sdk "$SGO")"
request go_delete_queue 1 DELETE $Q '' - "${GO[@]}" "Content-Md5:$(md5_sdk '')"
request go_delete 1 DELETE "$M?ReceiptHandle=$HC" '' - "${GO[@]}"
request py_batch_send 1 POST $M "$BATCH" - "${PYB[@]}"
request py_batch_delete 1 DELETE $M "$HANDLES" - "${PYB[@]}"
request py_receive 1 GET $M '' - "${PY[@]}"
request py_batch_receive 1 GET "$M?numOfMessages=16&waitseconds=30" '' - "${PY[@]}"
request py_peek 1 GET "$M?peekonly=true" '' - "${PY[@]}"
request py_list 2 GET /queues '' - "${PY[@]}" "x-mns-ret-number:1000"
request curl_create 1 PUT /queues/orders '' - "${PY[@]}" "content-type:application/x-www-form-urlencoded"

# Every topic action of §13.1, as the SDKs send it.
T=/topics/orders
request py_create_topic 1 PUT $T "$TPY" - "${PYB[@]}"
request go_create_topic 1 PUT $T "$TGO" - "${GO[@]}" "Content-Md5:$(md5_sdk "$TGO")"
request py_set_topic 1 PUT "$T?metaoverride=true" "$TRET" - "${PYB[@]}"
request py_get_topic 1 GET $T '' - "${PY[@]}"
request go_delete_topic 1 DELETE $T '' - "${GO[@]}"
request py_list_topic 1 GET /topics/ '' - "${PY[@]}" "x-mns-prefix:o" "x-mns-ret-number:10" \
  "x-mns-marker:m1" "x-mns-with-meta:true"
request py_subscribe 1 PUT $T/subscriptions/s1 "$SPY" - "${PYB[@]}"
request java_subscribe 1 PUT $T/subscriptions/s-2 "$SJAVA_SUB" - "${JAVA[@]}"
request java_set_sub 1 PUT "$T/subscriptions/s1?metaoverride=true" "$SSET" - "${JAVA[@]}"
request dlq_subscribe 1 PUT $T/subscriptions/s3 "$SDLQN" - "${PYB[@]}"
request py_get_sub 1 GET $T/subscriptions/s1 '' - "${PY[@]}"
request py_unsubscribe 1 DELETE $T/subscriptions/s%31 '' - "${PY[@]}"
request go_list_subs 1 GET $T/subscriptions '' - "${GO[@]}" "x-mns-with-meta:true"
request py_publish 1 POST $T/messages "$B2" - "${PYB[@]}"
request py_publish_tag 1 POST $T/messages "$PPY" - "${PYB[@]}" "content-md5:$(md5_sdk "$PPY")"
request go_publish 1 POST $T/messages "$PGO" - "${GO[@]}" "Content-Md5:$(md5_sdk "$PGO")"
request java_publish 1 POST $T/messages "$PJAVA" - "${JAVA[@]}"
request java_publish_null 1 POST $T/messages "$PJNULL" - "${JAVA[@]}"
request publish_tag16 1 POST $T/messages "$PTAG16" - "${PYB[@]}"
request publish_tag17 1 POST $T/messages "$PTAG17" - "${PYB[@]}"
request publish_batch 1 POST $T/messages "$PBATCH" - "${PYB[@]}"

# ---- dates (fuzz_sts also parses every field as an RFC 1123 date) ----
i=0
for d in "$DATE" 'Thu, 09 Jul 2015 03:01:34 GMT' 'Thu, 01 Jan 1970 00:00:00 GMT' \
         'Thu, 29 Feb 2024 23:59:60 GMT' 'Fri, 31 Dec 9999 23:59:59 GMT' \
         'Tue, 02 Jan 2024 02:49:05 GMT' 'Tue, 02 Jan 2024 03:19:05 GMT'; do
  printf '%s\0/\0Date:%s\0x-mns-version:2015-06-06\0Authorization:MNS %s:x\0\0' \
    "$d" "$d" "$AK" >"$out/fuzz_sts/date$((i++))"
done

# ---- signature V4 (protocol §3.6): J1-J3 again, with the Java SDK's V4 signatures ----
v4() {   # v4 NAME SIGNATURE: NAME_v4 is NAME with its Authorization replaced
  local d
  for d in fuzz_sts fuzz_request; do
    sed -z "s#^Authorization:MNS .*#Authorization:MNS4-HMAC-SHA256 Credential=$AK/20240102/cn-hangzhou/mns/aliyun_v4_request,Signature=$2#" \
      "$out/$d/$1" >"$out/$d/$1_v4"
  done
}
v4 j1 09d68529a631e73186c334aca82210b5e2831bbfa41a5f2456f2751bbe17e9c5
v4 j2 f221bf1ac24f9c8adc1dad4638051836ff9ac2b2df66ee73becb218db479df47
v4 j3 b9b582022279b07fb46d441146760cabca1e6f4382dd60cefba57cec460d27d5
echo "make_corpus: $(find "$out" -type f | wc -l) seeds in $(pwd)/$out"
