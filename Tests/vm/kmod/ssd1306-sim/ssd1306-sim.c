// SPDX-License-Identifier: GPL-2.0
/*
 * ssd1306-sim: a simulated SSD1306 / SH1106 OLED controller behind its own I2C adapter, for
 * the bike computer's VM tests (Tests/vm, docs/testing.md). Licensed under the GNU General
 * Public License, version 2 (GPL-2.0), like the kernel it is built against.
 *
 * The adapter ("ssd1306-sim", /dev/i2c-N with i2c-dev) implements master_xfer, so plain
 * write(), I2C_RDWR and the SMBus I2C-block path (emulated by the I2C core through
 * master_xfer) all reach the controller. One device answers, at `address` (0x3C, or 0x3D).
 * Every write message is one transaction: a control byte (Co bit 7, D/C# bit 6), then
 * commands with their arguments or display data.
 *
 * The controller model is the one of the project's SSD1306Emulator
 * (Sources/Display/SSD1306Emulator.swift), statement for statement: page, horizontal and
 * vertical addressing with column and page windows, the SH1106's 132-column memory and its
 * page/column commands, display on/off, charge pump (SSD1306 8D) / DC-DC (SH1106 AD),
 * contrast, inversion, entire-display-on, segment remap, COM scan direction, start line,
 * display offset, multiplex ratio, commands whose arguments span transactions. The VM tests
 * send both the same byte streams and compare memory and state, so neither drifts unseen.
 *
 * debugfs, /sys/kernel/debug/ssd1306-sim/:
 *   gddram          read: the display memory, 8 pages x 128 (SH1106: 132) column bytes
 *   state           read: registers and counters, one "name value" per line
 *   power_on_reset  write anything: the controller loses power (display off, charge pump
 *                   off, registers at reset values, GDDRAM cleared)
 *   unplugged       write 1: every transfer is NACKed (a loose connector); 0: answers again
 *   controller      read/write "ssd1306" or "sh1106" (a write also resets the controller)
 *   adapter         read: the adapter number N of /dev/i2c-N
 * Parameters: address (0x3C), controller ("ssd1306"), nack_errno (EREMOTEIO, what a
 * Raspberry Pi's i2c-bcm2835 returns for a NACK; writable at run time).
 */
#include <linux/debugfs.h>
#include <linux/errno.h>
#include <linux/fs.h>
#include <linux/i2c.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

static unsigned short address = 0x3c;
module_param(address, ushort, 0444);
MODULE_PARM_DESC(address, "7-bit address of the controller (0x3c or 0x3d)");

static int nack_errno = EREMOTEIO;
module_param(nack_errno, int, 0644);
MODULE_PARM_DESC(nack_errno, "errno of a NACK: EREMOTEIO (121, i2c-bcm2835), ENXIO (6), ...");

static char *controller = "ssd1306";
module_param(controller, charp, 0444);
MODULE_PARM_DESC(controller, "ssd1306 or sh1106");

#define SIM_PAGES 8
#define SIM_COLUMNS_MAX 132

enum { MODE_HORIZONTAL = 0, MODE_VERTICAL = 1, MODE_PAGE = 2 };

struct ssd1306_sim {
	struct mutex lock;
	struct i2c_adapter adapter;
	struct dentry *debugfs;
	bool sh1106;
	int columns;		/* memory columns: 128, SH1106 132 */
	u8 memory[SIM_PAGES * SIM_COLUMNS_MAX];

	int mode;
	int column_start, column_end, page_start, page_end, column, page;
	bool display_on, charge_pump_on, inverse, entire_display_on;
	bool segment_remap, com_scan_remapped;
	u8 contrast;
	int start_line, display_offset, multiplex_rows;

	/* the command parser: an opcode waiting for args_needed more argument bytes */
	u8 opcode;
	u8 args[6];
	int arg_count, args_needed;

	bool unplugged;
	u64 transactions, bytes_received, data_bytes_written, commands_executed;
	u64 unknown_commands, dropped_data_bytes, resets, nacks, probes;
};

static struct ssd1306_sim *sim;

/* Power-on reset: every register at its reset value, memory cleared. Not counted here. */
static void sim_reset_registers(struct ssd1306_sim *s)
{
	memset(s->memory, 0, sizeof(s->memory));
	s->mode = MODE_PAGE;
	s->column_start = 0;
	s->column_end = 127;
	s->page_start = 0;
	s->page_end = 7;
	s->column = 0;
	s->page = 0;
	s->display_on = false;
	s->charge_pump_on = s->sh1106;	/* the SH1106's DC-DC is on after reset */
	s->contrast = 0x7f;
	s->inverse = false;
	s->entire_display_on = false;
	s->segment_remap = false;
	s->com_scan_remapped = false;
	s->start_line = 0;
	s->display_offset = 0;
	s->multiplex_rows = 64;
	s->opcode = 0;
	s->arg_count = 0;
	s->args_needed = 0;
}

static void sim_write_data(struct ssd1306_sim *s, u8 b)
{
	if (s->column < 0 || s->column > s->columns - 1 || s->page >= SIM_PAGES) {
		s->dropped_data_bytes++;
		return;
	}
	s->memory[s->page * s->columns + s->column] = b;
	s->data_bytes_written++;
	switch (s->mode) {
	case MODE_PAGE:
		if (!s->sh1106)
			s->column = s->column >= 127 ? 0 : s->column + 1;
		else
			s->column += 1;	/* SH1106: stops past 131; later bytes are dropped */
		break;
	case MODE_HORIZONTAL:
		if (s->column >= s->column_end) {
			s->column = s->column_start;
			s->page = s->page >= s->page_end ? s->page_start : s->page + 1;
		} else {
			s->column += 1;
		}
		break;
	case MODE_VERTICAL:
		if (s->page >= s->page_end) {
			s->page = s->page_start;
			s->column = s->column >= s->column_end ? s->column_start : s->column + 1;
		} else {
			s->page += 1;
		}
		break;
	}
}

/* Argument bytes the command takes, or -1 when it takes none (or is not this controller's). */
static int sim_arguments_for(const struct ssd1306_sim *s, u8 op)
{
	switch (op) {
	case 0x81: case 0xa8: case 0xd3: case 0xd5: case 0xd9: case 0xda: case 0xdb:
		return 1;
	}
	if (!s->sh1106) {
		switch (op) {
		case 0x20: case 0x8d: return 1;
		case 0x21: case 0x22: case 0xa3: return 2;
		case 0x26: case 0x27: return 6;
		case 0x29: case 0x2a: return 5;
		}
	} else if (op == 0xad) {
		return 1;
	}
	return -1;
}

static bool sim_page_mode_commands_apply(const struct ssd1306_sim *s)
{
	return s->sh1106 || s->mode == MODE_PAGE;
}

static void sim_execute(struct ssd1306_sim *s, u8 op)
{
	bool sh1106_lacks = (op >= 0x20 && op <= 0x2f) || op == 0x8d || op == 0xa3;
	bool ssd1306_lacks = op == 0xad || (op >= 0x30 && op <= 0x33);
	int a0 = s->args[0], a1 = s->args[1];

	if (s->sh1106 ? sh1106_lacks : ssd1306_lacks) {
		s->unknown_commands++;
		return;
	}
	s->commands_executed++;
	if (op <= 0x0f) {
		if (sim_page_mode_commands_apply(s))
			s->column = (s->column & 0xf0) | (op & 0x0f);
	} else if (op >= 0x10 && op <= 0x1f) {
		if (sim_page_mode_commands_apply(s))
			s->column = (s->column & 0x0f) | ((op & 0x0f) << 4);
	} else if (op >= 0xb0 && op <= 0xb7) {
		if (sim_page_mode_commands_apply(s))
			s->page = op & 0x07;
	} else if (op >= 0x40 && op <= 0x7f) {
		s->start_line = op & 0x3f;
	} else {
		switch (op) {
		case 0x20:
			/* 0 horizontal, 1 vertical, 2 page; 3 (invalid) is taken as page */
			s->mode = (a0 & 0x03) == 3 ? MODE_PAGE : (a0 & 0x03);
			break;
		case 0x21:
			s->column_start = a0 & 0x7f;
			s->column_end = a1 & 0x7f;
			s->column = s->column_start;
			break;
		case 0x22:
			s->page_start = a0 & 0x07;
			s->page_end = a1 & 0x07;
			s->page = s->page_start;
			break;
		case 0x81: s->contrast = a0; break;
		case 0xa0: s->segment_remap = false; break;
		case 0xa1: s->segment_remap = true; break;
		case 0xa4: s->entire_display_on = false; break;
		case 0xa5: s->entire_display_on = true; break;
		case 0xa6: s->inverse = false; break;
		case 0xa7: s->inverse = true; break;
		case 0xa8: s->multiplex_rows = min(64, max(16, (a0 & 0x3f) + 1)); break;
		case 0xae: s->display_on = false; break;
		case 0xaf: s->display_on = true; break;
		case 0xc0: s->com_scan_remapped = false; break;
		case 0xc8: s->com_scan_remapped = true; break;
		case 0xd3: s->display_offset = a0 & 0x3f; break;
		case 0x8d: s->charge_pump_on = (a0 & 0x04) != 0; break;	/* 14 on, 10 off */
		case 0xad: s->charge_pump_on = (a0 & 0x01) != 0; break;	/* 8B on, 8A off */
		case 0xd5: case 0xd9: case 0xda: case 0xdb: case 0xe3:
		case 0x2e: case 0x2f: case 0x26: case 0x27: case 0x29: case 0x2a: case 0xa3:
		case 0x30: case 0x31: case 0x32: case 0x33:
			break;	/* electrical settings, scrolling, pump voltage: no effect on the image */
		default:
			s->commands_executed--;
			s->unknown_commands++;
		}
	}
}

static void sim_command(struct ssd1306_sim *s, u8 b)
{
	int n;

	if (s->args_needed > 0) {
		s->args[min(s->arg_count, 5)] = b;
		s->arg_count++;
		s->args_needed--;
		if (s->args_needed == 0)
			sim_execute(s, s->opcode);
		return;
	}
	n = sim_arguments_for(s, b);
	if (n >= 0) {
		s->opcode = b;
		s->arg_count = 0;
		s->args_needed = n;
		return;
	}
	sim_execute(s, b);
}

/* One transaction: the control byte, then `len` bytes. */
static void sim_transaction(struct ssd1306_sim *s, u8 control, const u8 *bytes, u16 len)
{
	bool is_data = control & 0x40, single_byte = control & 0x80, expect_control = false;
	u16 i;

	s->transactions++;
	s->bytes_received += 1 + len;
	for (i = 0; i < len; i++) {
		u8 b = bytes[i];

		if (expect_control) {
			is_data = b & 0x40;
			single_byte = b & 0x80;
			expect_control = false;
			continue;
		}
		if (is_data)
			sim_write_data(s, b);
		else
			sim_command(s, b);
		if (single_byte)
			expect_control = true;
	}
}

static int sim_master_xfer(struct i2c_adapter *adap, struct i2c_msg *msgs, int num)
{
	struct ssd1306_sim *s = i2c_get_adapdata(adap);
	int i, ret = num;

	mutex_lock(&s->lock);
	for (i = 0; i < num; i++) {
		struct i2c_msg *m = &msgs[i];

		if (m->addr != address || (m->flags & I2C_M_TEN) || s->unplugged) {
			s->nacks++;
			ret = -abs(nack_errno);
			break;
		}
		if (m->flags & I2C_M_RD) {
			ret = -EOPNOTSUPP;	/* the controllers cannot be read over I2C */
			break;
		}
		if (m->len == 0) {
			s->probes++;	/* address-only write: ACK (i2cdetect) */
			continue;
		}
		sim_transaction(s, m->buf[0], m->buf + 1, m->len - 1);
	}
	mutex_unlock(&s->lock);
	return ret;
}

static u32 sim_functionality(struct i2c_adapter *adap)
{
	return I2C_FUNC_I2C | I2C_FUNC_SMBUS_EMUL;
}

static const struct i2c_algorithm sim_algorithm = {
	.master_xfer = sim_master_xfer,
	.functionality = sim_functionality,
};

/* ---- debugfs */

static ssize_t gddram_read(struct file *f, char __user *buf, size_t count, loff_t *ppos)
{
	struct ssd1306_sim *s = f->private_data;
	u8 *copy;
	size_t size;
	ssize_t r;

	copy = kmalloc(sizeof(s->memory), GFP_KERNEL);
	if (!copy)
		return -ENOMEM;
	mutex_lock(&s->lock);
	size = SIM_PAGES * s->columns;
	memcpy(copy, s->memory, size);
	mutex_unlock(&s->lock);
	r = simple_read_from_buffer(buf, count, ppos, copy, size);
	kfree(copy);
	return r;
}

static const struct file_operations gddram_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.read = gddram_read,
	.llseek = default_llseek,
};

static int state_show(struct seq_file *m, void *unused)
{
	struct ssd1306_sim *s = m->private;

	mutex_lock(&s->lock);
	seq_printf(m, "controller %s\n", s->sh1106 ? "sh1106" : "ssd1306");
	seq_printf(m, "addressing_mode %d\n", s->mode);
	seq_printf(m, "column_start %d\ncolumn_end %d\npage_start %d\npage_end %d\n",
		   s->column_start, s->column_end, s->page_start, s->page_end);
	seq_printf(m, "column %d\npage %d\n", s->column, s->page);
	seq_printf(m, "display_on %d\ncharge_pump_on %d\ncontrast %d\ninverse %d\n",
		   s->display_on, s->charge_pump_on, s->contrast, s->inverse);
	seq_printf(m, "entire_display_on %d\nsegment_remap %d\ncom_scan_remapped %d\n",
		   s->entire_display_on, s->segment_remap, s->com_scan_remapped);
	seq_printf(m, "start_line %d\ndisplay_offset %d\nmultiplex_rows %d\n",
		   s->start_line, s->display_offset, s->multiplex_rows);
	seq_printf(m, "transactions %llu\nbytes_received %llu\ndata_bytes_written %llu\n",
		   s->transactions, s->bytes_received, s->data_bytes_written);
	seq_printf(m, "commands_executed %llu\nunknown_commands %llu\ndropped_data_bytes %llu\n",
		   s->commands_executed, s->unknown_commands, s->dropped_data_bytes);
	seq_printf(m, "resets %llu\nnacks %llu\nprobes %llu\nunplugged %d\n",
		   s->resets, s->nacks, s->probes, s->unplugged);
	mutex_unlock(&s->lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(state);

static ssize_t reset_write(struct file *f, const char __user *buf, size_t count, loff_t *ppos)
{
	struct ssd1306_sim *s = f->private_data;

	mutex_lock(&s->lock);
	sim_reset_registers(s);
	s->resets++;
	mutex_unlock(&s->lock);
	return count;
}

static const struct file_operations reset_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.write = reset_write,
	.llseek = noop_llseek,
};

static ssize_t unplugged_write(struct file *f, const char __user *buf, size_t count, loff_t *ppos)
{
	struct ssd1306_sim *s = f->private_data;
	bool v;
	int r = kstrtobool_from_user(buf, count, &v);

	if (r)
		return r;
	mutex_lock(&s->lock);
	s->unplugged = v;
	mutex_unlock(&s->lock);
	return count;
}

static ssize_t unplugged_read(struct file *f, char __user *buf, size_t count, loff_t *ppos)
{
	struct ssd1306_sim *s = f->private_data;
	char text[3];

	mutex_lock(&s->lock);
	text[0] = s->unplugged ? '1' : '0';
	mutex_unlock(&s->lock);
	text[1] = '\n';
	text[2] = 0;
	return simple_read_from_buffer(buf, count, ppos, text, 2);
}

static const struct file_operations unplugged_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.read = unplugged_read,
	.write = unplugged_write,
	.llseek = default_llseek,
};

static ssize_t controller_read(struct file *f, char __user *buf, size_t count, loff_t *ppos)
{
	struct ssd1306_sim *s = f->private_data;
	const char *name;

	mutex_lock(&s->lock);
	name = s->sh1106 ? "sh1106\n" : "ssd1306\n";
	mutex_unlock(&s->lock);
	return simple_read_from_buffer(buf, count, ppos, name, strlen(name));
}

static ssize_t controller_write(struct file *f, const char __user *buf, size_t count, loff_t *ppos)
{
	struct ssd1306_sim *s = f->private_data;
	char text[16];
	size_t n = min(count, sizeof(text) - 1);
	bool sh1106;

	if (copy_from_user(text, buf, n))
		return -EFAULT;
	text[n] = 0;
	if (sysfs_streq(text, "ssd1306"))
		sh1106 = false;
	else if (sysfs_streq(text, "sh1106"))
		sh1106 = true;
	else
		return -EINVAL;
	mutex_lock(&s->lock);
	s->sh1106 = sh1106;
	s->columns = sh1106 ? 132 : 128;
	sim_reset_registers(s);
	s->resets++;
	mutex_unlock(&s->lock);
	return count;
}

static const struct file_operations controller_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.read = controller_read,
	.write = controller_write,
	.llseek = default_llseek,
};

static int adapter_show(struct seq_file *m, void *unused)
{
	struct ssd1306_sim *s = m->private;

	seq_printf(m, "%d\n", s->adapter.nr);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(adapter);

static int __init ssd1306_sim_init(void)
{
	int r;

	if (address != 0x3c && address != 0x3d) {
		pr_err("ssd1306-sim: address must be 0x3c or 0x3d, not 0x%x\n", address);
		return -EINVAL;
	}
	sim = kzalloc(sizeof(*sim), GFP_KERNEL);
	if (!sim)
		return -ENOMEM;
	mutex_init(&sim->lock);
	if (sysfs_streq(controller, "sh1106")) {
		sim->sh1106 = true;
	} else if (!sysfs_streq(controller, "ssd1306")) {
		pr_err("ssd1306-sim: controller must be ssd1306 or sh1106\n");
		kfree(sim);
		return -EINVAL;
	}
	sim->columns = sim->sh1106 ? 132 : 128;
	sim_reset_registers(sim);

	sim->adapter.owner = THIS_MODULE;
	sim->adapter.algo = &sim_algorithm;
	strscpy(sim->adapter.name, "ssd1306-sim", sizeof(sim->adapter.name));
	i2c_set_adapdata(&sim->adapter, sim);
	r = i2c_add_adapter(&sim->adapter);
	if (r) {
		kfree(sim);
		return r;
	}
	sim->debugfs = debugfs_create_dir("ssd1306-sim", NULL);
	debugfs_create_file("gddram", 0444, sim->debugfs, sim, &gddram_fops);
	debugfs_create_file("state", 0444, sim->debugfs, sim, &state_fops);
	debugfs_create_file("power_on_reset", 0200, sim->debugfs, sim, &reset_fops);
	debugfs_create_file("unplugged", 0644, sim->debugfs, sim, &unplugged_fops);
	debugfs_create_file("controller", 0644, sim->debugfs, sim, &controller_fops);
	debugfs_create_file("adapter", 0444, sim->debugfs, sim, &adapter_fops);
	pr_info("ssd1306-sim: %s at 0x%02x on i2c-%d\n", sim->sh1106 ? "SH1106" : "SSD1306",
		address, sim->adapter.nr);
	return 0;
}

static void __exit ssd1306_sim_exit(void)
{
	debugfs_remove_recursive(sim->debugfs);
	i2c_del_adapter(&sim->adapter);
	kfree(sim);
}

module_init(ssd1306_sim_init);
module_exit(ssd1306_sim_exit);
MODULE_DESCRIPTION("Simulated SSD1306/SH1106 OLED controller on its own I2C adapter (tests)");
MODULE_AUTHOR("Bike computer project");
MODULE_LICENSE("GPL");
