// SPDX-License-Identifier: GPL-2.0-or-later
// A QEMU TCG plugin that counts the guest instructions a program executes (docs/performance.md,
// scripts/bench/arm64-insn.sh): qemu-aarch64 -d plugin -plugin ./qemu-insn.so PROGRAM prints
// "qemu-insn: N instructions" when it exits. It is compiled against QEMU's plugin API header
// (include/qemu/qemu-plugin.h of the installed QEMU's source, GPL-2.0-or-later), hence its licence.
//
// Each translated block adds its instruction count to one counter as it starts executing (an
// inline add: no call per block). A block left early by an exception still counts whole: the
// program measured here takes none in its measured stretch.
#include <inttypes.h>
#include <stdio.h>

#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

static uint64_t instructions;

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
    (void)id;
    qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &instructions, qemu_plugin_tb_n_insns(tb));
}

static void on_exit(qemu_plugin_id_t id, void *unused) {
    (void)id;
    (void)unused;
    char line[64];
    snprintf(line, sizeof line, "qemu-insn: %" PRIu64 " instructions\n", instructions);
    qemu_plugin_outs(line);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv) {
    (void)info;
    (void)argc;
    (void)argv;
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    qemu_plugin_register_atexit_cb(id, on_exit, NULL);
    return 0;
}
