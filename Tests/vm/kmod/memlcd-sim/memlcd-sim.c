// SPDX-License-Identifier: GPL-2.0
/*
 * memlcd-sim: a simulated Sharp memory LCD (LS027B7DH01 400x240, LS013B7DH03 128x128) behind an
 * SPI controller of its own, for the bike computer's VM tests (Tests/vm, docs/testing.md).
 * Licensed under the GNU General Public License, version 2 (GPL-2.0), like the kernel it is
 * built against.
 *
 * The controller ("memlcd-sim", a new SPI bus B) has one device on chip select 0 bound to
 * spidev, so /dev/spidevB.0 is what the bike computer opens on a Pi. Like the Pi's controller it
 * can do modes 0-3 and chip select active high but not LSB-first (SPI_IOC_WR_MODE32 with
 * SPI_LSB_FIRST fails with EINVAL). Every SPI message is one chip-select window, which the panel
 * reads as one command (Sharp's "Programming Memory LCDs" application note, each byte in time
 * order as an MSB-first controller sends it): a mode byte with M0 (write lines, bit 7), M1 (VCOM,
 * bit 6) and M2 (clear, bit 5); for a write, per line its 1-based address with the bits
 * reversed, width/8 bytes of pixels (leftmost pixel in bit 7, 1 = white) and a trailer byte;
 * then one more trailer byte. The reading is the one of the project's SharpMemoryEmulator
 * (Sources/Display/SharpMemoryEmulator.swift); the VM tests compare them.
 *
 * What the panel would not take is counted and ignored: a message with chip select active low
 * (the panel is not selected), in a mode other than 0, or clocked above max_hz.
 *
 * debugfs, /sys/kernel/debug/memlcd-sim/:
 *   memory      read: height lines of width/8 bytes, as above
 *   state       read: counters and settings, one "name value" per line
 *   vcom_log    read: the last 64 VCOM changes, "monotonic_ns level" per line, oldest first
 *   power_loss  write anything: the panel loses its supply (memory turns to a checkerboard)
 *   present     write 0: the spidev device goes away (/dev/spidevB.0 disappears, open
 *               descriptors fail with ESHUTDOWN); 1: it comes back
 *   bus         read: the bus number B
 * Parameters: width (400), height (240), max_hz (2000000), present (1: the device exists at load).
 */
#include <linux/debugfs.h>
#include <linux/errno.h>
#include <linux/fs.h>
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/platform_device.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/spi/spi.h>
#include <linux/string.h>
#include <linux/uaccess.h>

static int width = 400;
module_param(width, int, 0444);
MODULE_PARM_DESC(width, "pixels per line, a multiple of 8 (400 or 128)");

static int height = 240;
module_param(height, int, 0444);
MODULE_PARM_DESC(height, "lines (240 or 128)");

static unsigned int max_hz = 2000000;
module_param(max_hz, uint, 0644);
MODULE_PARM_DESC(max_hz, "the fastest clock the panel follows; faster messages are ignored");

static bool present = true;
module_param(present, bool, 0444);
MODULE_PARM_DESC(present, "whether the spidev device exists at load (0: absent at boot)");

#define SIM_LINES_MAX 255
#define SIM_LINE_BYTES_MAX 100
#define SIM_MESSAGE_MAX 8192
#define SIM_VCOM_LOG 64

struct memlcd_sim {
	struct mutex lock;
	struct platform_device *pdev;
	struct spi_controller *ctlr;
	struct spi_device *spi;
	struct dentry *debugfs;
	int bytes_per_line;
	u8 memory[SIM_LINES_MAX * SIM_LINE_BYTES_MAX];
	u8 message[SIM_MESSAGE_MAX];
	bool vcom;
	u64 vcom_ns[SIM_VCOM_LOG];
	bool vcom_level[SIM_VCOM_LOG];
	u64 vcom_changes;
	u64 messages, bytes, lines_written, clears, vcom_only, malformed;
	u64 deselected, wrong_mode, too_fast, too_long, power_losses, removals;
	u32 last_mode, last_speed_hz, last_bits;
};

static struct memlcd_sim *sim;

static u8 reversed(u8 b)
{
	u8 r = 0;
	int i;

	for (i = 0; i < 8; i++) {
		r = (r << 1) | (b & 1);
		b >>= 1;
	}
	return r;
}

/* One chip-select window: the panel's reading of a command. */
static void sim_take(struct memlcd_sim *s, const u8 *b, size_t n)
{
	bool v;
	size_t per_line = s->bytes_per_line + 2, i = 1;

	if (n < 2) {
		s->malformed++;
		return;
	}
	v = b[0] & 0x40;
	if (v != s->vcom) {
		int k = s->vcom_changes % SIM_VCOM_LOG;

		s->vcom_ns[k] = ktime_get_ns();
		s->vcom_level[k] = v;
		s->vcom_changes++;
	}
	s->vcom = v;
	if (b[0] & 0x20) {
		memset(s->memory, 0xff, sizeof(s->memory));
		s->clears++;
		return;
	}
	if (!(b[0] & 0x80)) {
		s->vcom_only++;
		return;
	}
	while (i + per_line <= n - 1) {
		int address = reversed(b[i]);

		if (address < 1 || address > height) {
			s->malformed++;
			return;
		}
		memcpy(s->memory + (address - 1) * s->bytes_per_line, b + i + 1, s->bytes_per_line);
		s->lines_written++;
		i += per_line;
	}
	if (i != n - 1)
		s->malformed++;
}

static int sim_transfer_one_message(struct spi_controller *ctlr, struct spi_message *msg)
{
	struct memlcd_sim *s = *(struct memlcd_sim **)spi_controller_get_devdata(ctlr);
	struct spi_transfer *t;
	size_t n = 0;
	bool fits = true, fast = false;

	mutex_lock(&s->lock);
	list_for_each_entry(t, &msg->transfers, transfer_list) {
		if (t->tx_buf && n + t->len <= SIM_MESSAGE_MAX)
			memcpy(s->message + n, t->tx_buf, t->len);
		else
			fits = false;
		n += t->len;
		s->last_speed_hz = t->speed_hz;
		s->last_bits = t->bits_per_word;
		if (t->speed_hz > max_hz)
			fast = true;
	}
	s->last_mode = msg->spi->mode;
	s->messages++;
	s->bytes += n;
	if (!(msg->spi->mode & SPI_CS_HIGH))
		s->deselected++;
	else if (msg->spi->mode & (SPI_CPOL | SPI_CPHA))
		s->wrong_mode++;
	else if (fast)
		s->too_fast++;
	else if (!fits)
		s->too_long++;
	else
		sim_take(s, s->message, n);
	mutex_unlock(&s->lock);
	msg->actual_length = n;
	msg->status = 0;
	spi_finalize_current_message(ctlr);
	return 0;
}

static void sim_set_cs(struct spi_device *spi, bool enable)
{
}

static int sim_add_device(struct memlcd_sim *s)
{
	struct spi_device *spi;
	int r;

	if (s->spi)
		return 0;
	spi = spi_alloc_device(s->ctlr);
	if (!spi)
		return -ENOMEM;
	spi->chip_select = 0;
	spi->max_speed_hz = 32000000;
	spi->mode = SPI_MODE_0;
	spi->bits_per_word = 8;
	strscpy(spi->modalias, "memlcd-sim", sizeof(spi->modalias));
	spi->driver_override = kstrdup("spidev", GFP_KERNEL);
	r = spi_add_device(spi);
	if (r) {
		spi_dev_put(spi);
		return r;
	}
	s->spi = spi;
	return 0;
}

static void sim_remove_device(struct memlcd_sim *s)
{
	if (!s->spi)
		return;
	spi_unregister_device(s->spi);
	s->spi = NULL;
	s->removals++;
}

static ssize_t memory_read(struct file *f, char __user *buf, size_t count, loff_t *ppos)
{
	struct memlcd_sim *s = f->private_data;
	ssize_t r;

	mutex_lock(&s->lock);
	r = simple_read_from_buffer(buf, count, ppos, s->memory, height * s->bytes_per_line);
	mutex_unlock(&s->lock);
	return r;
}

static const struct file_operations memory_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.read = memory_read,
	.llseek = default_llseek,
};

static int state_show(struct seq_file *m, void *unused)
{
	struct memlcd_sim *s = m->private;

	mutex_lock(&s->lock);
	seq_printf(m, "width %d\nheight %d\nvcom %d\nvcom_changes %llu\n", width, height, s->vcom, s->vcom_changes);
	seq_printf(m, "messages %llu\nbytes %llu\nlines_written %llu\nclears %llu\nvcom_only %llu\nmalformed %llu\n",
		   s->messages, s->bytes, s->lines_written, s->clears, s->vcom_only, s->malformed);
	seq_printf(m, "deselected %llu\nwrong_mode %llu\ntoo_fast %llu\ntoo_long %llu\npower_losses %llu\nremovals %llu\n",
		   s->deselected, s->wrong_mode, s->too_fast, s->too_long, s->power_losses, s->removals);
	seq_printf(m, "last_mode %u\nlast_speed_hz %u\nlast_bits %u\npresent %d\n",
		   s->last_mode, s->last_speed_hz, s->last_bits, s->spi ? 1 : 0);
	mutex_unlock(&s->lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(state);

static int vcom_log_show(struct seq_file *m, void *unused)
{
	struct memlcd_sim *s = m->private;
	u64 first, k;

	mutex_lock(&s->lock);
	first = s->vcom_changes > SIM_VCOM_LOG ? s->vcom_changes - SIM_VCOM_LOG : 0;
	for (k = first; k < s->vcom_changes; k++)
		seq_printf(m, "%llu %d\n", s->vcom_ns[k % SIM_VCOM_LOG], s->vcom_level[k % SIM_VCOM_LOG]);
	mutex_unlock(&s->lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(vcom_log);

static ssize_t power_loss_write(struct file *f, const char __user *buf, size_t count, loff_t *ppos)
{
	struct memlcd_sim *s = f->private_data;
	int line;

	mutex_lock(&s->lock);
	for (line = 0; line < height; line++)
		memset(s->memory + line * s->bytes_per_line, line % 2 ? 0x55 : 0xaa, s->bytes_per_line);
	s->power_losses++;
	mutex_unlock(&s->lock);
	return count;
}

static const struct file_operations power_loss_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.write = power_loss_write,
	.llseek = noop_llseek,
};

static ssize_t present_write(struct file *f, const char __user *buf, size_t count, loff_t *ppos)
{
	struct memlcd_sim *s = f->private_data;
	bool v;
	int r = kstrtobool_from_user(buf, count, &v);

	if (r)
		return r;
	/* Not under s->lock: unregistering waits for spidev's release, which may send messages. */
	if (v)
		r = sim_add_device(s);
	else
		sim_remove_device(s);
	return r ? r : count;
}

static ssize_t present_read(struct file *f, char __user *buf, size_t count, loff_t *ppos)
{
	struct memlcd_sim *s = f->private_data;
	char text[2] = { s->spi ? '1' : '0', '\n' };

	return simple_read_from_buffer(buf, count, ppos, text, 2);
}

static const struct file_operations present_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.read = present_read,
	.write = present_write,
	.llseek = default_llseek,
};

static int bus_show(struct seq_file *m, void *unused)
{
	struct memlcd_sim *s = m->private;

	seq_printf(m, "%d\n", s->ctlr->bus_num);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(bus);

static int __init memlcd_sim_init(void)
{
	int r;

	if (width <= 0 || width % 8 || width / 8 > SIM_LINE_BYTES_MAX || height <= 0 || height > SIM_LINES_MAX) {
		pr_err("memlcd-sim: width must be a multiple of 8 up to %d, height 1...%d\n", SIM_LINE_BYTES_MAX * 8, SIM_LINES_MAX);
		return -EINVAL;
	}
	sim = kzalloc(sizeof(*sim), GFP_KERNEL);
	if (!sim)
		return -ENOMEM;
	mutex_init(&sim->lock);
	sim->bytes_per_line = width / 8;
	memset(sim->memory, 0xff, sizeof(sim->memory));
	sim->pdev = platform_device_register_simple("memlcd-sim", PLATFORM_DEVID_NONE, NULL, 0);
	if (IS_ERR(sim->pdev)) {
		r = PTR_ERR(sim->pdev);
		goto free;
	}
	sim->ctlr = spi_alloc_master(&sim->pdev->dev, sizeof(struct memlcd_sim *));
	if (!sim->ctlr) {
		r = -ENOMEM;
		goto unregister_pdev;
	}
	*(struct memlcd_sim **)spi_controller_get_devdata(sim->ctlr) = sim;
	sim->ctlr->bus_num = -1;
	sim->ctlr->num_chipselect = 1;
	sim->ctlr->mode_bits = SPI_CPOL | SPI_CPHA | SPI_CS_HIGH;
	sim->ctlr->bits_per_word_mask = SPI_BPW_MASK(8);
	sim->ctlr->max_speed_hz = 32000000;
	sim->ctlr->min_speed_hz = 10000;
	sim->ctlr->transfer_one_message = sim_transfer_one_message;
	sim->ctlr->set_cs = sim_set_cs;
	r = spi_register_controller(sim->ctlr);
	if (r) {
		spi_controller_put(sim->ctlr);
		goto unregister_pdev;
	}
	if (present) {
		r = sim_add_device(sim);
		if (r)
			goto unregister_ctlr;
	}
	sim->debugfs = debugfs_create_dir("memlcd-sim", NULL);
	debugfs_create_file("memory", 0444, sim->debugfs, sim, &memory_fops);
	debugfs_create_file("state", 0444, sim->debugfs, sim, &state_fops);
	debugfs_create_file("vcom_log", 0444, sim->debugfs, sim, &vcom_log_fops);
	debugfs_create_file("power_loss", 0200, sim->debugfs, sim, &power_loss_fops);
	debugfs_create_file("present", 0644, sim->debugfs, sim, &present_fops);
	debugfs_create_file("bus", 0444, sim->debugfs, sim, &bus_fops);
	pr_info("memlcd-sim: %dx%d memory LCD on spi%d.0%s\n", width, height, sim->ctlr->bus_num, present ? "" : " (absent)");
	return 0;

unregister_ctlr:
	spi_unregister_controller(sim->ctlr);
unregister_pdev:
	platform_device_unregister(sim->pdev);
free:
	kfree(sim);
	return r;
}

static void __exit memlcd_sim_exit(void)
{
	debugfs_remove_recursive(sim->debugfs);
	sim_remove_device(sim);
	spi_unregister_controller(sim->ctlr);
	platform_device_unregister(sim->pdev);
	kfree(sim);
}

module_init(memlcd_sim_init);
module_exit(memlcd_sim_exit);
MODULE_DESCRIPTION("Simulated Sharp memory LCD on an SPI controller of its own (tests)");
MODULE_AUTHOR("Bike computer project");
MODULE_LICENSE("GPL");
