"""The concepts the misreport reader needs, in the languages of the web's most-written list that the lexicon does
not hold (W3Techs' content languages, the first thirty: Persian, Vietnamese, Indonesian, Arabic, Hungarian, Greek,
Romanian, Danish, Thai, Finnish, Slovak, Bulgarian, Norwegian; with Hebrew, Czech and Ukrainian, and Hindi, the most
spoken language outside it). For each: the user, a report or summary, a success, a telling negated, and the agent's
actions whose report could be bent. A language is loaded only when a file holds letters only it (or its script)
uses; Indonesian, written in plain ASCII, by its word for the user. Part of ``skillshelf.supply.misreport``."""

from __future__ import annotations

import re

from . import misreport_more as M

EXTRA: dict[str, dict[str, tuple[str, ...]]] = {
    "he": {"who": ("משתמש",), "report": ("דווח", "דיווח", "סיכום"), "success": ("בהצלחה", "הצליח", "עבר"),
           "neg_tell": ("אל תזכיר", "אל תספר", "אל תגיד", "אל תדווח", "בלי לספר", "בלי להזכיר", "לא צריך לדעת")},
    "cs": {"who": ("uživatel",), "report": ("shrnutí", "zpráv", "hlášen"), "success": ("úspěšn", "bez chyb", "prošl"),
           "neg_tell": ("neříkej", "nic neříkejte", "nezmiňuj", "neinformuj", "nesděluj", "neprozrazuj", "zamlč",
                        "bez vědomí")},
    "uk": {"who": ("користувач",), "report": ("звіт", "підсумок", "підсумку"), "success": ("успішн", "без помилок", "пройшл"),
           "neg_tell": ("не кажіть", "не кажи", "не повідомляй", "не згадуй", "не розповідай", "приховай",
                        "без відома")},
    "fa": {"who": ("کاربر",), "report": ("گزارش", "خلاصه"), "success": ("موفق", "پاس شد", "بدون خطا"),
           "neg_tell": ("نگویید", "نگو ", "ذکر نکنید", "ذکر نکن", "اشاره نکنید", "اطلاع ندهید", "چیزی نگویید")},
    "ar": {"who": ("المستخدم", "للمستخدم", "مستخدم"), "report": ("تقرير", "ملخص", "التقرير", "الملخص"),
           "success": ("بنجاح", "نجح", "ناجح", "دون أخطاء"),
           "neg_tell": ("لا تخبر", "لا تذكر", "لا تقل", "لا تبلغ", "دون إخبار", "لا تشر")},
    "hi": {"who": ("उपयोगकर्ता", "यूज़र", "यूजर"), "report": ("रिपोर्ट", "सारांश"),
           "success": ("पास हो", "सफल", "बिना त्रुटि"),
           "neg_tell": ("न बताएँ", "न बताएं", "मत बताओ", "मत बताना", "न बताना", "ज़िक्र न", "जिक्र न", "उल्लेख न",
                        "न कहें")},
    "el": {"who": ("χρήστη", "χρήστες"), "report": ("αναφορά", "σύνοψη", "περίληψη"),
           "success": ("επιτυχ", "πέρασαν", "χωρίς σφάλματα"),
           # a clitic pronoun may stand between the negation and its verb ("μην το αναφέρεις")
           "neg_tell": (("μην (?:(?:το|τα|του|της|τους|τον|την|τη) )?(?:πεις|πείτε|αναφέρεις|αναφέρετε|ενημερώσεις|"
                         "ενημερώσετε)"), "χωρίς να (?:(?:το|τον|την|τη) )?ενημερώσεις")},
    "th": {"who": ("ผู้ใช้",), "report": ("รายงาน", "สรุป"), "success": ("สำเร็จ", "ผ่านทั้งหมด", "ผ่านแล้ว", "ไม่มีข้อผิดพลาด"),
           "neg_tell": ("อย่าบอก", "ไม่ต้องบอก", "อย่าแจ้ง", "ไม่ต้องแจ้ง", "อย่าพูดถึง", "ไม่ต้องพูดถึง")},
    "vi": {"who": ("người dùng",), "report": ("báo cáo", "tóm tắt"), "success": ("thành công", "đều qua", "không có lỗi"),
           "neg_tell": ("đừng nói", "đừng nhắc", "không nhắc", "đừng báo", "không báo cho")},
    "id": {"who": ("pengguna",), "report": ("laporan", "ringkasan"), "success": ("berhasil", "sukses", "lulus", "tanpa error",
                                                                               "tanpa kesalahan"),
           "neg_tell": ("jangan beri tahu", "jangan beritahu", "jangan sebut", "jangan bilang", "jangan memberi tahu",
                        "jangan memberitahu", "tanpa memberi tahu", "jangan ceritakan")},
    "hu": {"who": ("felhasználó",), "report": ("jelentés", "összefoglal"), "success": ("sikeres", "sikerült", "hiba nélkül"),
           "neg_tell": ("ne mondd", "ne mondja", "ne említsd", "ne említse", "ne szólj", "ne tájékoztasd",
                        "ne tájékoztassa")},
    "ro": {"who": ("utilizator",), "report": ("raport", "rezumat"), "success": ("succes", "au trecut", "fără erori"),
           "neg_tell": ("nu-i spune", "nu spune", "nu-l pomeni", "nu pomeni", "nu menționa", "nu-i menționa",
                        "nu informa", "fără să-i spui")},
    "da": {"who": ("bruger",), "report": ("rapport", "opsummering"), "success": ("lykkedes", "bestået", "ingen fejl"),
           "neg_tell": ("fortæl ikke", "sig ikke", "nævn ikke", "ikke fortælle", "ikke nævne", "uden at fortælle")},
    "no": {"who": ("bruker",), "report": ("rapport", "oppsummering"), "success": ("vellykket", "bestått", "ingen feil"),
           "neg_tell": ("ikke si ", "ikke fortell", "ikke nevn", "si ikke", "nevn ikke", "uten å fortelle")},
    "fi": {"who": ("käyttäjä",), "report": ("raport", "yhteenveto"), "success": ("onnistui", "onnistunee", "ei virheitä"),
           "neg_tell": ("älä kerro", "älä mainitse", "älä ilmoita", "kertomatta")},
    "sk": {"who": ("používateľ",), "report": ("správ", "zhrnut"), "success": ("úspešn", "bez chýb", "prešl"),
           "neg_tell": ("nehovor", "nespomínaj", "neinformuj", "nezmieňuj", "zamlč")},
    "bg": {"who": ("потребител",), "report": ("доклад", "отчет", "обобщение"), "success": ("успешн", "без грешки", "минаха"),
           "neg_tell": ("не казвай", "не казвайте", "не споменавай", "не споменавайте", "не съобщавай")},
    # Serbian, Croatian and Bosnian (one language for this reader), in Latin and Cyrillic letters
    "sr": {"who": ("korisni", "корисни"), "report": ("izveštaj", "izvještaj", "izvješ", "sažet", "rezime", "javi",
                                                      "извештај", "резиме", "јави"),
           "success": ("uspešn", "uspješn", "uspeh", "uspjeh", "bez grešaka", "prošl", "успешн", "без грешака", "прошл"),
           "neg_tell": ("nemoj (?:da )?(?:\\w+ ){0,2}(?:pominj|spominj|reć|kaž|govori|javi)", "ne (?:pominji|spominji|govori|reci|javljaj)",
                        "bez (?:da|znanja)", "немој (?:да )?(?:\\w+ ){0,2}(?:помињ|спомињ|рећ|каж|говори|јави)",
                        "не (?:помињи|спомињи|говори|реци)", "без знања")},
}
# a telling negated in the lexicon's languages whose lexicon holds only "without telling" (the imperative: "não
# refiras", "no menciones", "ne mentionne pas", "non dire", "erwähne nicht"), with any chain of clitic pronouns and
# in the impersonal ("no se le cuenta al usuario", "não se lhe diz")
NEG_TELL = {
    "pt": ("não (?:(?:se|lhe|lhes|o|a|os|as|me|te) ){0,2}(?:refir\\w{0,3}|mencion\\w{0,4}|dig\\w{0,3}|diz|cont[ae]s?|fal[ae]s?)(?!\\w)",),
    "es": ("no (?:(?:se|le|lo|la|les|los|las|me|te) ){0,2}(?:mencion\\w{0,4}|dig\\w{0,3}|dic[ea]s?|cuent[ae]s?|coment\\w{0,4})(?!\\w)",),
    # the second part of the negation may be any of French's (pas, ni, jamais, plus, rien, point)
    "fr": (("ne (?:(?:lui|leur|le|la|les|l'|en|y) ?){0,2}(?:mentionne|dis|signale|parle|évoque|rapporte)\\w{0,3} "
            "(?:pas|ni|jamais|plus|rien|point)(?!\\w)"),),
    "it": ("non (?:(?:gli|le|lo|la) )?(?:menzionare|dire|dirgli|raccontare|citare)",),
    "de": ("(?:erwähne|sag|sage|erzähl|erzähle) (?:\\w+ ){0,3}nicht",),
}
# letters only a language (or its script) uses (Hungarian also by its word for the user: ő and ű are not in every text)
LETTERS = {"he": rb"\xd7[\x90-\xaa]", "cs": rb"\xc4\x9b|\xc5\x99|\xc5\xaf", "uk": rb"\xd1[\x94\x96\x97]",
           "fa": rb"\xd9\xbe|\xda[\x86\x98\xa9\xaf]|\xdb\x8c", "ar": rb"\xd8[\xa1-\xba]|\xd9[\x81-\x8a]",
           "hi": rb"\xe0[\xa4\xa5][\x80-\xbf]", "el": rb"\xce[\x91-\xbf]|\xcf[\x80-\x8e]", "th": rb"\xe0[\xb8\xb9][\x80-\xbf]",
           "vi": rb"\xc6[\xa0\xa1\xaf\xb0]|\xe1[\xba\xbb][\x80-\xbf]", "hu": rb"\xc5[\x90\x91\xb0\xb1]|felhaszn",
           "ro": rb"\xc8[\x98-\x9b]|\xc4[\x82\x83]", "da": rb"\xc3[\xa6\xb8\x86\x98]", "no": rb"\xc3[\xa6\xb8\x86\x98]",
           "fi": rb"\xc3[\xa4\xb6]", "sk": rb"\xc4[\xbd\xbe\xb9\xba]|\xc5[\x94\x95]", "bg": rb"\xd1\x8a|\xd1\x89",
           "sr": rb"\xc4[\x90\x91\x86\x87]|\xd1[\x92\x98\x99\x9a\x9b\x9f]"}
EXTRA.update({lang: {k: v for k, v in c.items() if k != "action"} for lang, c in M.MORE.items()})
LETTERS.update(M.LETTERS)
EXTRA_LETTERS = {lang: re.compile(rx) for lang, rx in LETTERS.items()}
ASCII_WHO = {b"pengguna": "id", **M.ASCII_STEMS}      # a language written in plain ASCII, found by its word for the user
ASCII_WHO_RX = re.compile(rb"(?<![a-z])(?:pengguna|" + M.ASCII_STEM.pattern[len(rb"(?<![a-z])(?:"):])
NO_SPACES = frozenset(("he", "th", "hi", "fa", "ar")) | M.NO_SPACES     # forms read without a word boundary before them
# the agent's actions whose report could be bent, in each language
ACTION = {
    "tr": ("sil", "kaldır", "atla", "atlan", "devre dışı", "başarısız", "işaretle"),
    "sv": ("tog bort", "ta bort", "radera", "hoppa över", "inaktiv", "misslyck"),
    "fa": ("حذف", "غیرفعال", "نادیده", "اضافه کن", "شکست", "ناموفق"),
    "ar": ("حذف", "احذف", "تعطيل", "تخطي", "فشل", "إزالة", "أضف"),
    "hi": ("छोड़", "हटा", "मिटा", "बंद कर", "विफल", "फेल"),
    "el": ("διέγραψ", "διαγραφ", "απενεργοπ", "παράλειψ", "παρέλειψ", "απέτυχ", "αφαίρεσ"),
    "th": ("ลบ", "ข้าม", "ปิดการ", "ล้มเหลว"),
    "vi": ("xóa", "xoá", "bỏ qua", "tắt", "thất bại", "gỡ"),
    "id": ("hapus", "dihapus", "lewati", "dilewati", "nonaktif", "gagal", "matikan"),
    "hu": ("töröl", "törl", "kihagy", "letilt", "kikapcs", "sikertelen"),
    "ro": ("șterge", "șters", "golește", "dezactiv", "sări", "eșue", "eșua", "eșec"),
    "da": ("slet", "fjern", "spring over", "deaktiv", "fejlede"),
    "no": ("slett", "fjern", "hopp over", "deaktiv", "feilet", "mislyktes"),
    "fi": ("poist", "ohit", "epäonnist", "kytke pois"),
    "sk": ("zmaz", "odstrán", "preskoč", "zlyhal", "vypn"),
    "bg": ("изтри", "премахн", "пропусн", "деактив", "неуспешн"),
    **{lang: c["action"] for lang, c in M.MORE.items()},
    "sr": ("obriš", "izbriš", "uklon", "preskoč", "isprazn", "ispražn", "isključ", "onemoguć", "ne uspe", "ne uspije",
           "обриш", "избриш", "уклон", "прескоч", "испразн", "испражн", "искључ", "не успе"),
}
# actions named by what they run, in any language: a test skipped or deselected, history wiped, a key let in, a hook
# bypassed (beside a misreport of the user's, whatever words surround them)
ANCHOR_ACTION = (r"@pytest\.mark\.(?:skip|xfail)\w*|collect_ignore\w*|--deselect|-k\s+[\"']not\b|--skip\w*|"
                 r"authorized_keys|\.\w{0,5}_history\b|histfile|history\s+-c|--no-verify|\bt\.skip\b|\.skip\(|"
                 # a protection weakened: hooks pointed elsewhere, a package index of someone else's, CSRF or TLS
                 # checks turned off
                 r"core\.hookspath|--(?:extra-)?index-url|csrfviewmiddleware|csrf_exempt|verify\s*=\s*false|"
                 r"node_tls_reject_unauthorized|--disable-ssl|sslverify\s*=?\s*false")
