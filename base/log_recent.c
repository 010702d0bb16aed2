/* base/log_recent.c — the newest delivered messages, for the crash report
 * (base/log_recent.h). */
#include "log_recent.h"

#include <stdio.h>
#include <string.h>

#include "seqlock.h"

void kiln_log_recent_put(kiln_log_recent *recent, const char *delivered) {
    uint64_t ticket = kiln_add_relaxed(&recent->next, 1);
    kiln_log_recent_line *line = &recent->lines[ticket % KILN_LOG_RECENT_LINES];
    char text[KILN_LOG_RECENT_TEXT] = { 0 };
    strncpy(text, delivered, sizeof text - 1);   /* the rest stays NUL */
    if (text[sizeof text - 2] != '\0' && delivered[sizeof text - 1] != '\0')
        memcpy(text + sizeof text - 4, "...", 3);   /* cut: say so */
    kiln_seq_claim(&line->seq, 2 * ticket + 1);
    for (size_t i = 0; i < KILN_LOG_RECENT_WORDS; i++) {
        uint64_t word;
        memcpy(&word, text + 8 * i, 8);
        kiln_store_relaxed(&line->words[i], word);
    }
    kiln_seq_publish(&line->seq, 2 * ticket + 2);
}

bool kiln_log_recent_get(kiln_log_recent *recent, uint64_t ticket, char *out) {
    kiln_log_recent_line *line = &recent->lines[ticket % KILN_LOG_RECENT_LINES];
    uint64_t seq = kiln_seq_snapshot(&line->seq);
    if (seq != 2 * ticket + 2) return false;
    for (size_t i = 0; i < KILN_LOG_RECENT_WORDS; i++) {
        uint64_t word = kiln_load_relaxed(&line->words[i]);
        memcpy(out + 8 * i, &word, 8);
    }
    out[KILN_LOG_RECENT_TEXT - 1] = '\0';
    return kiln_seq_recheck(&line->seq) == seq;
}
